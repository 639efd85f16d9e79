/**
 * RemotingCommand: one request or response of the RocketMQ remoting protocol, decoded.
 *
 * `extFields` is always a string→string map here, whatever the sender used: ali-ons writes native
 * JSON numbers and booleans, Java writes strings, and handlers parse by field name
 * (see ./ext-fields.ts). `serializeType` remembers how the header arrived so the answer goes back
 * in the same form (ali-ons can only read JSON headers).
 */
export const SerializeType = { JSON: 0, ROCKETMQ: 1 } as const;
export type SerializeType = (typeof SerializeType)[keyof typeof SerializeType];

/** flag bit 0: 0 = request, 1 = response. */
export const FLAG_RESPONSE = 1;
/** flag bit 1: the request expects no response. */
export const FLAG_ONEWAY = 2;

/** MQVersion ordinal we announce: V4_9_8 (so Java peers treat us as a current 4.9 node). */
export const OUR_VERSION = 409;

export type ExtFields = Record<string, string>;

export interface RemotingCommand {
  code: number;
  language: string;
  version: number;
  opaque: number;
  flag: number;
  remark?: string;
  extFields?: ExtFields;
  body?: Uint8Array;
  /**
   * Outbound only: a body given as pieces (e.g. stored records straight from the CommitLog), so
   * the frame encoder copies each piece once into the frame instead of the caller concatenating
   * them first. Ignored when `body` is set.
   */
  bodyParts?: readonly Uint8Array[];
  serializeType: SerializeType;
}

export function isResponse(cmd: RemotingCommand): boolean {
  return (cmd.flag & FLAG_RESPONSE) !== 0;
}

export function isOneway(cmd: RemotingCommand): boolean {
  return (cmd.flag & FLAG_ONEWAY) !== 0;
}

let nextOpaque = 0;

/**
 * Opaque ids start at 1 and wrap before 2^31: ali-ons replaces an opaque of 0 with a fresh number
 * while decoding, so a request with opaque 0 could never be matched by it.
 */
export function newOpaque(): number {
  nextOpaque = nextOpaque >= 0x7ffffff0 ? 1 : nextOpaque + 1;
  return nextOpaque;
}

export function createRequest(
  code: number,
  extFields?: ExtFields,
  body?: Uint8Array,
  serializeType: SerializeType = SerializeType.JSON,
): RemotingCommand {
  const cmd: RemotingCommand = {
    code,
    language: "JAVA",
    version: OUR_VERSION,
    opaque: newOpaque(),
    flag: 0,
    serializeType,
  };
  if (extFields) cmd.extFields = extFields;
  if (body) cmd.body = body;
  return cmd;
}

/** A response to `req`: same opaque, same serialize type, response flag set. */
export function createResponse(req: RemotingCommand, code: number, remark?: string, extFields?: ExtFields, body?: Uint8Array): RemotingCommand {
  const cmd: RemotingCommand = {
    code,
    language: "JAVA",
    version: OUR_VERSION,
    opaque: req.opaque,
    flag: FLAG_RESPONSE,
    serializeType: req.serializeType,
  };
  if (remark !== undefined) cmd.remark = remark;
  if (extFields) cmd.extFields = extFields;
  if (body && body.length > 0) cmd.body = body;
  return cmd;
}
