export * from "./command.ts";
export { decodeCommand, encodeCommand, FrameDecoder, FRAME_SIZE_MAX_BYTES_DEFAULT } from "./frame.ts";
export { RemotingConnection, RemotingClosedError, RemotingTimeoutError, normalizeAddress } from "./connection.ts";
export { RemotingServer, type RemotingServerOptions } from "./server.ts";
export { RemotingClient, REMOTING_CLIENT_DEFAULTS, splitHostPort, type RemotingClientOptions } from "./client.ts";
export { answerConfigUpdate, type RequestProcessor, type ProcessResult, type ConfigUpdateOutcome } from "./processor.ts";
export { RequestCode, requestCodeName } from "./request-code.ts";
export { ResponseCode, responseCodeName } from "./response-code.ts";
export { HeaderError, reqString, optString, reqInt, optInt, optBool, toInt } from "./ext-fields.ts";
