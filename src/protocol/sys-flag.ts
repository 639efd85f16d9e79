/**
 * The SYSFLAG int of a message record and of SEND_MESSAGE's header (Java `MessageSysFlag`,
 * docs/PROTOCOL.md §4.2): producers, the broker's send path, the store's index, the transaction
 * and schedule services and the admin tool all read it.
 *
 *   bit  31 ....... 11 | 10  9  8 | 7  6 |      5       |      4      |  3  2   |     1      |     0
 *                      | codec    | 5.x  | STOREHOST_V6 | BORNHOST_V6 | tx type | MULTI_TAGS | COMPRESSED
 *
 *   tx type (bits 2-3): 0x0 not a transaction, 0x4 prepared (half), 0x8 commit, 0xc rollback
 *   codec of a COMPRESSED body (bits 8-10): 0 = ZLIB (pre-5.x), 1 = LZ4, 2 = ZSTD, 3 = ZLIB
 *   bits 6-7 (NEED_UNWRAP, INNER_BATCH) are 5.x's and unused here
 *
 * The two host bits decide the record's host widths, so they are defined with the record layout
 * in src/common/message-record.ts (common/ cannot import protocol/) and taken from there.
 */
import { BORNHOST_V6_FLAG, STOREHOST_V6_FLAG } from "../common/message-record.ts";

export const SysFlag = {
  COMPRESSED: 0x1,
  MULTI_TAGS: 0x2,
  TRANSACTION_NOT_TYPE: 0x0,
  TRANSACTION_PREPARED_TYPE: 0x4,
  TRANSACTION_COMMIT_TYPE: 0x8,
  TRANSACTION_ROLLBACK_TYPE: 0xc,
  /** Bits 2-3 hold the transaction type. */
  TRANSACTION_TYPE_MASK: 0xc,
  BORNHOST_V6: BORNHOST_V6_FLAG,
  STOREHOST_V6: STOREHOST_V6_FLAG,
} as const;

/** The transaction type bits (one of SysFlag.TRANSACTION_*_TYPE). */
export function transactionType(sysFlag: number): number {
  return sysFlag & SysFlag.TRANSACTION_TYPE_MASK;
}

/** The codec of a COMPRESSED body, in bits 8-10 (the 5.x Java client; 4.x leaves them 0). */
export const CompressionFlag = {
  /** Bits 8-10 of SYSFLAG: the codec of a COMPRESSED body. */
  TYPE_MASK: 0x700,
  TYPE_SHIFT: 8,
  /** Codec numbers in those bits (Java's CompressionType values). */
  ZLIB_LEGACY: 0,
  LZ4: 1,
  ZSTD: 2,
  ZLIB: 3,
} as const;
