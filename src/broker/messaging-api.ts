/**
 * BrokerMessaging: what a second protocol in front of this broker (the 5.x gRPC endpoint,
 * src/grpc/) may ask of it. Each operation is the function the remoting request's processor
 * calls, as the admin API's are (./admin-api.ts), so the two doors cannot drift apart:
 *
 *   settings   the broker's name and address (QueryRoute's Broker, the store host)
 *   topic      TopicConfig as the topic table holds it (GET_TOPIC_CONFIG's)
 *   send       SEND_MESSAGE_V2                          SendMessageProcessor.send
 *
 * Nothing here knows gRPC: the caller maps its messages to a send and the outcome back.
 */
import { createOffsetMsgId, encodeProperties, tryParseHostAddress, type HostAddress, type PutMessageStatus } from "../commitlog/index.ts";
import { AUTO_CREATE_TOPIC, type TopicConfig } from "../protocol/topics.ts";
import type { BrokerContext } from "./context.ts";
import type { SendMessageProcessor } from "./processors/send-message.ts";

/** One message to store, as a SEND_MESSAGE_V2 would carry it (properties decoded). */
export interface MessagingSend {
  topic: string;
  /** The queue the caller picked (a write queue of `topic`). */
  queueId: number;
  sysFlag: number;
  bornTimestamp: number;
  /** The record's properties, RocketMQ's names (MessageConst) and user ones. */
  properties: Record<string, string>;
  body: Uint8Array;
  /** The producer's address (`ip:port`), the record's BORNHOST; anything unparsable stores 0.0.0.0:0. */
  bornHost: string;
  /** The producer's group (PGROUP and the transaction check-back's target). */
  producerGroup: string;
}

/** Refused before the store: the remoting response code and remark the processor answers with. */
export interface MessagingRefusal {
  code: number;
  remark: string;
}

/** The store's answer: stored (offset message id, queue and queue offset) unless `status` says otherwise. */
export interface MessagingStored {
  status: PutMessageStatus;
  remark?: string;
  stored?: { msgId: string; queueId: number; queueOffset: number };
}

export interface BrokerMessaging {
  brokerName(): string;
  /** `ip:port` clients use for this broker's remoting port. */
  brokerAddr(): string;
  topic(name: string): TopicConfig | undefined;
  send(m: MessagingSend): Promise<MessagingStored | MessagingRefusal>;
}

const NO_HOST: HostAddress = { ip: new Uint8Array([0, 0, 0, 0]), port: 0 };

async function messagingSend(ctx: BrokerContext, sender: SendMessageProcessor, m: MessagingSend): Promise<MessagingStored | MessagingRefusal> {
  const born = tryParseHostAddress(m.bornHost);
  const out = await sender.send({
    header: {
      producerGroup: m.producerGroup,
      topic: m.topic,
      defaultTopic: AUTO_CREATE_TOPIC,
      defaultTopicQueueNums: ctx.settings.defaultTopicQueueNums,
      queueId: m.queueId,
      sysFlag: m.sysFlag,
      bornTimestamp: m.bornTimestamp,
      flag: 0,
      properties: encodeProperties(m.properties),
      reconsumeTimes: 0,
      maxReconsumeTimes: undefined,
      batch: false,
    },
    body: m.body,
    batch: false,
    bornHost: "invalid" in born ? NO_HOST : born,
    from: m.bornHost,
    version: Number.MAX_SAFE_INTEGER,
  });
  if ("code" in out) return out;
  const first = out.result.appended[0];
  const remark = out.result.remark;
  const base: MessagingStored = remark !== undefined ? { status: out.result.status, remark } : { status: out.result.status };
  if (!first) return base;
  return {
    ...base,
    stored: { msgId: createOffsetMsgId(ctx.settings.storeHost, first.physicalOffset), queueId: out.queueId, queueOffset: first.queueOffset },
  };
}

/** The BrokerMessaging of a started broker: its context and its send processor. */
export function brokerMessaging(ctx: BrokerContext, sender: SendMessageProcessor): BrokerMessaging {
  return {
    brokerName: () => ctx.settings.brokerName,
    brokerAddr: () => ctx.settings.brokerAddr,
    topic: (name) => ctx.topics.get(name),
    send: (m) => messagingSend(ctx, sender, m),
  };
}
