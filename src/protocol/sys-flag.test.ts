import { describe, expect, test } from "bun:test";
import { BORNHOST_V6_FLAG, STOREHOST_V6_FLAG } from "../common/message-record.ts";
import { CompressionFlag, SysFlag, transactionType } from "./sys-flag.ts";

describe("SYSFLAG (docs/PROTOCOL.md §4.2)", () => {
  test("sysflag bits and transaction type", () => {
    expect(SysFlag).toMatchObject({
      COMPRESSED: 0x1,
      MULTI_TAGS: 0x2,
      TRANSACTION_NOT_TYPE: 0,
      TRANSACTION_PREPARED_TYPE: 0x4,
      TRANSACTION_COMMIT_TYPE: 0x8,
      TRANSACTION_ROLLBACK_TYPE: 0xc,
      BORNHOST_V6: 0x10,
      STOREHOST_V6: 0x20,
    });
    expect(transactionType(0x1 | 0x8 | 0x30)).toBe(SysFlag.TRANSACTION_COMMIT_TYPE);
    expect(transactionType(0x301)).toBe(SysFlag.TRANSACTION_NOT_TYPE);
    expect(transactionType(0xc)).toBe(SysFlag.TRANSACTION_ROLLBACK_TYPE);
    expect(transactionType(0x4 | 0x2)).toBe(SysFlag.TRANSACTION_PREPARED_TYPE);
  });

  test("the host bits are the record layout's, the codec bits 8-10 above them", () => {
    expect(SysFlag.BORNHOST_V6).toBe(BORNHOST_V6_FLAG);
    expect(SysFlag.STOREHOST_V6).toBe(STOREHOST_V6_FLAG);
    expect(CompressionFlag.TYPE_MASK >>> CompressionFlag.TYPE_SHIFT).toBe(0x7);
    const low = SysFlag.COMPRESSED | SysFlag.MULTI_TAGS | SysFlag.TRANSACTION_TYPE_MASK | SysFlag.BORNHOST_V6 | SysFlag.STOREHOST_V6;
    expect(CompressionFlag.TYPE_MASK & low).toBe(0);
  });
});
