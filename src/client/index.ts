/**
 * rocketbun/client: Producer, PushConsumer and PullConsumer speaking the RocketMQ 4.x remoting
 * protocol, to RocketBun or to any Apache RocketMQ 4.x/5.x broker. Runs on Bun and on Node 20.
 */
export { Producer, type ProducerOptions, type SendResult, type SendStatus, type SendOptions } from "./producer.ts";
export {
  TransactionProducer,
  type TransactionProducerOptions,
  type TransactionSendResult,
  type TransactionState,
  type LocalTransaction,
} from "./transaction-producer.ts";
export { PushConsumer, type PushConsumerOptions, type MessageHandler, type ConsumeResult } from "./push-consumer.ts";
export { PullConsumer, type PullConsumerOptions } from "./pull-consumer.ts";
export { MQClientError, MQBrokerError, MQTimeoutError } from "./errors.ts";
export type { ClientTlsOptions } from "./client-instance.ts";
export type { Message, MessageExt } from "./message.ts";
export type { MessageQueue } from "../protocol/route.ts";
export type { AclCredentials } from "../protocol/acl-signature.ts";
export type { FromWhere, MessageModel, SubscriptionExpression } from "./consumer-core.ts";
export { allocateAveragely } from "./route.ts";
