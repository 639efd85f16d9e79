import { expect, test } from "bun:test";
import { decodeRegisterBrokerBody, encodeRegisterBrokerBody, encodeRegisterBrokerBodyCompressed, type RegisterBrokerBody } from "./register-broker-body.ts";

const body: RegisterBrokerBody = {
  dataVersion: { counter: 12, timestamp: 1700000000000 },
  topicConfigTable: {
    TopicA: { topicName: "TopicA", readQueueNums: 4, writeQueueNums: 4, perm: 6, topicFilterType: "SINGLE_TAG", topicSysFlag: 0, order: false },
  },
  filterServerList: ["10.0.0.5:4000"],
};

test("JSON form round-trips", () => {
  expect(decodeRegisterBrokerBody(encodeRegisterBrokerBody(body), false, 409)).toEqual(body);
});

test("compressed form decodes (order and sysFlag are not carried)", () => {
  expect(decodeRegisterBrokerBody(encodeRegisterBrokerBodyCompressed(body), true, 409)).toEqual(body);
});

test("a pre-3.0.11 broker sends the bare wrapper", () => {
  const bare = new TextEncoder().encode(JSON.stringify({ dataVersion: body.dataVersion, topicConfigTable: body.topicConfigTable }));
  expect(decodeRegisterBrokerBody(bare, false, 10)).toEqual({ ...body, filterServerList: [] });
});

test("garbage is a reason, not an exception", () => {
  expect(decodeRegisterBrokerBody(new Uint8Array([1, 2, 3]), false, 409)).toHaveProperty("invalid");
  expect(decodeRegisterBrokerBody(new Uint8Array([1, 2, 3]), true, 409)).toHaveProperty("invalid");
  const bad = new TextEncoder().encode('{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"readQueueNums":"x"}}}}');
  expect(decodeRegisterBrokerBody(bad, false, 409)).toHaveProperty("invalid");
});

test("fastjson's unquoted numeric keys are accepted", () => {
  const text = '{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,"timestamp":2},"topicConfigTable":{"T":{"topicName":"T","readQueueNums":1,"writeQueueNums":1,"perm":6,"attrs":{0:"x"}}}}}';
  const r = decodeRegisterBrokerBody(new TextEncoder().encode(text), false, 409);
  expect(r).toHaveProperty("topicConfigTable.T.readQueueNums", 1);
});
