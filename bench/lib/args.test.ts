import { expect, test } from "bun:test";
import { parseBenchArgs } from "../run.ts";
import { ROCKETMQ_VERSIONS } from "./rocketmq-peer.ts";

test("a whole run (npm run bench, also --quick) includes Apache RocketMQ; runs that measure something else leave it out", () => {
  expect(parseBenchArgs([]).rocketmq).toEqual([...ROCKETMQ_VERSIONS]);
  expect(parseBenchArgs(["--quick"]).rocketmq).toEqual([...ROCKETMQ_VERSIONS]);
  for (const off of [["--smoke"], ["--no-peers"], ["--only", "W1,W4"], ["--acl"], ["--cpu-prof"], ["--no-rocketmq"]]) {
    expect(parseBenchArgs(off).rocketmq).toBeNull();
  }
  expect(parseBenchArgs(["--no-peers", "--rocketmq=5.3.3"]).rocketmq).toEqual(["5.3.3"]);
  expect(parseBenchArgs(["--rocketmq", "--no-rocketmq"]).rocketmq).toBeNull();
  expect(() => parseBenchArgs(["--rocketmq=4.0.0"])).toThrow(/unknown version/);
});

test("--only takes the POP workloads (W2p, W3p); Apache RocketMQ only when asked for", () => {
  expect([...parseBenchArgs(["--only", "W2p,W3p"]).only!]).toEqual(["W2p", "W3p"]);
  expect(parseBenchArgs(["--only", "W2p,W3p"]).rocketmq).toBeNull();
  expect(parseBenchArgs(["--no-peers", "--only", "W2p,W3p", "--rocketmq=5.3.3"]).rocketmq).toEqual(["5.3.3"]);
  expect(() => parseBenchArgs(["--only", "W2P"])).toThrow(/unknown workload W2P/);
});
