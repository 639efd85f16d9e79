/**
 * Wire helpers for integration tests: a RemotingClient per simulated peer (each gets its own
 * connection, as separate broker processes would) and request builders for name-server calls.
 */
import { scope } from "../../src/common/log.ts";
import { jsonBytes, parseJsonBytes } from "../../src/common/json.ts";
import {
  createRequest,
  RemotingClient,
  REMOTING_CLIENT_DEFAULTS,
  RequestCode,
  type ExtFields,
  type RemotingCommand,
} from "../../src/remoting/index.ts";
import { encodeRegisterBrokerBody } from "../../src/namesrv/index.ts";
import { type TopicConfig } from "../../src/protocol/topics.ts";

export function newClient(): RemotingClient {
  return new RemotingClient({ ...REMOTING_CLIENT_DEFAULTS, log: scope("test-client") });
}

export interface BrokerIdentity {
  clusterName: string;
  brokerAddr: string;
  brokerName: string;
  brokerId: number;
  haServerAddr: string;
}

export function registerBrokerRequest(
  b: BrokerIdentity,
  topics: Record<string, TopicConfig>,
  dataVersion = { counter: 1, timestamp: 1700000000000 },
): RemotingCommand {
  const body = encodeRegisterBrokerBody({ dataVersion, topicConfigTable: topics, filterServerList: [] });
  return createRequest(
    RequestCode.REGISTER_BROKER,
    {
      brokerName: b.brokerName,
      brokerAddr: b.brokerAddr,
      clusterName: b.clusterName,
      haServerAddr: b.haServerAddr,
      brokerId: String(b.brokerId),
      compressed: "false",
      bodyCrc32: String(Bun.hash.crc32(body) & 0x7fffffff),
    },
    body,
  );
}

/** UPDATE_AND_CREATE_TOPIC fields for a SINGLE_TAG topic (what mqadmin updateTopic sends). */
export function createTopicExt(topic: string, queues: number, perm = 6, writeQueues = queues): ExtFields {
  return {
    topic,
    defaultTopic: "TBW102",
    readQueueNums: String(queues),
    writeQueueNums: String(writeQueues),
    perm: String(perm),
    topicFilterType: "SINGLE_TAG",
    topicSysFlag: "0",
    order: "false",
  };
}

export function createTopicRequest(topic: string, queues: number, perm = 6, writeQueues = queues): RemotingCommand {
  return createRequest(RequestCode.UPDATE_AND_CREATE_TOPIC, createTopicExt(topic, queues, perm, writeQueues));
}

export function routeRequest(topic: string): RemotingCommand {
  return createRequest(RequestCode.GET_ROUTEINFO_BY_TOPIC, { topic });
}

export function bodyJson<T = unknown>(cmd: RemotingCommand): T {
  if (!cmd.body) throw new Error(`response code ${cmd.code} has no body (remark: ${cmd.remark})`);
  return parseJsonBytes(cmd.body) as T;
}

export { jsonBytes };
