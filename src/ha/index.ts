export { HAService, type HAServiceOptions, type SlaveStatus, type AckResult, type AckEligible } from "./ha-service.ts";
export { HAClient, type HAClientOptions, type HAClientStatus } from "./ha-client.ts";
export { encodeReport, encodeIdentity, encodeEpochFrame, encodeChunkHeader, ChunkDecoder, ReportDecoder, HA_HEADER_SIZE, HA_REPORT_SIZE } from "./transfer.ts";
export { tcpTransport, tlsTransport, type HaTransport, type HaSocket, type HaSocketEvents, type HaListener } from "./transport.ts";
