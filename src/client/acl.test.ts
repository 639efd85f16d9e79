/** The client's signing (ClientInstanceOptions.credentials) as the broker-side validator checks it. */
import { expect, test } from "bun:test";
import { checkAccess, parseAclRules, type AclRules } from "../acl/index.ts";
import { createRequest, type RemotingCommand } from "../remoting/command.ts";
import { RequestCode } from "../remoting/request-code.ts";
import { ClientInstance } from "./client-instance.ts";

const parsed = parseAclRules(
  "acl.yml",
  "accounts:\n  - accessKey: client-ak\n    secretKey: client-sk\n    defaultTopicPerm: PUB|SUB\n    defaultGroupPerm: SUB\n",
);
const rules = parsed as AclRules;

function capture(client: ClientInstance): RemotingCommand[] {
  const sent: RemotingCommand[] = [];
  const fake = async (_addr: string, cmd: RemotingCommand) => {
    sent.push(cmd);
    return createRequest(0);
  };
  Object.assign(client.remoting, { invoke: fake, invokeOneway: fake });
  return sent;
}

test("requests of a client with credentials verify with the broker's validator (heartbeat, send, oneway)", async () => {
  expect("errors" in parsed).toBe(false);
  const client = new ClientInstance({
    namesrv: "127.0.0.1:9876",
    credentials: { accessKey: "client-ak", secretKey: "client-sk", securityToken: "tok" },
  });
  const sent = capture(client);
  const hb = new TextEncoder().encode(
    JSON.stringify({ clientID: client.clientId, consumerDataSet: [{ groupName: "g", subscriptionDataSet: [{ topic: "t" }] }] }),
  );
  await client.invokeBroker("127.0.0.1:10911", RequestCode.HEART_BEAT, undefined, hb);
  await client.invokeBroker("127.0.0.1:10911", RequestCode.SEND_MESSAGE_V2, { a: "pg", b: "t", i: "KEYS\u0001é\u0002" }, new Uint8Array([0, 255]));
  await client.invokeBrokerOneway("127.0.0.1:10911", RequestCode.UNREGISTER_CLIENT, { clientID: client.clientId, consumerGroup: "g" });
  expect(sent.length).toBe(3);
  for (const cmd of sent) {
    expect(cmd.extFields?.AccessKey).toBe("client-ak");
    expect(cmd.extFields?.SecurityToken).toBe("tok");
    expect(checkAccess(rules, "172.16.0.1", cmd)).toBeUndefined();
  }
  sent[1]!.extFields!.b = "other";
  expect(checkAccess(rules, "172.16.0.1", sent[1]!)?.reason).toBe("bad-signature");
});

test("a client without credentials sends no ACL fields", async () => {
  const client = new ClientInstance({ namesrv: "127.0.0.1:9876" });
  const sent = capture(client);
  await client.invokeBroker("127.0.0.1:10911", RequestCode.PULL_MESSAGE, { topic: "t" });
  expect(sent[0]!.extFields).toEqual({ topic: "t" });
  expect(checkAccess(rules, "172.16.0.1", sent[0]!)?.reason).toBe("no-access-key");
});
