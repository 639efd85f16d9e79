import { expect, test } from "bun:test";
import { createRequest, RequestCode, ResponseCode, type RemotingConnection } from "../../remoting/index.ts";
import type { BrokerContext } from "../context.ts";
import type { EndTransactionRequest, TransactionalMessageService } from "../transaction/transactional-message-service.ts";
import { EndTransactionProcessor } from "./end-transaction.ts";

const conn = { remoteAddress: "127.0.0.1:1" } as unknown as RemotingConnection;
const warnings: string[] = [];
const log = { rateLimited: (_l: string, _k: string, m: string) => void warnings.push(m) };

function rig(brokerRole: "SLAVE" | "ASYNC_MASTER") {
  const seen: EndTransactionRequest[] = [];
  const tx = { endTransaction: async (h: EndTransactionRequest) => (seen.push(h), { code: ResponseCode.SUCCESS, action: "committed" }) };
  const ctx = { settings: { brokerName: "broker-a" }, role: { isSlave: brokerRole === "SLAVE" }, log } as unknown as BrokerContext;
  return { p: new EndTransactionProcessor(ctx, tx as unknown as TransactionalMessageService), seen };
}

const header = {
  producerGroup: "PG",
  tranStateTableOffset: "3",
  commitLogOffset: "4096",
  commitOrRollback: "8",
  fromTransactionCheck: "true",
  msgId: "U",
};

test("a slave refuses END_TRANSACTION (SLAVE_NOT_AVAILABLE) without touching the transaction service", async () => {
  const { p, seen } = rig("SLAVE");
  const res = await p.process(conn, createRequest(RequestCode.END_TRANSACTION, header));
  expect(res.code).toBe(ResponseCode.SLAVE_NOT_AVAILABLE);
  expect(res.remark).toContain("slave");
  expect(seen).toEqual([]);
});

test("a master parses the header and hands it to the transaction service; a missing field is an error", async () => {
  const { p, seen } = rig("ASYNC_MASTER");
  expect((await p.process(conn, createRequest(RequestCode.END_TRANSACTION, header))).code).toBe(ResponseCode.SUCCESS);
  expect(seen).toEqual([{ producerGroup: "PG", tranStateTableOffset: 3, commitLogOffset: 4096, commitOrRollback: 8, fromTransactionCheck: true }]);
  const { commitLogOffset: _drop, ...partial } = header;
  await expect(p.process(conn, createRequest(RequestCode.END_TRANSACTION, partial))).rejects.toThrow("commitLogOffset");
});
