/**
 * Putting a stored record back into the log under the queue it was really meant for: a delayed
 * message coming out of SCHEDULE_TOPIC_XXXX, a committed transactional half message. Both keep
 * the body, flag, sysFlag, born time and host, reconsume times and prepared offset of the stored
 * record, and name their target in the REAL_TOPIC / REAL_QID properties.
 */
import { MessageConst } from "../protocol/message-const.ts";
import { encodeProperties, setIndexedFields, type DecodedRecord, type PutMessageRequest } from "../commitlog/index.ts";
import { type Invalid } from "../common/invalid.ts";

/** Where a parked record's message really goes (REAL_TOPIC / REAL_QID), or why it cannot be told. */
export function realQueueOf(props: Record<string, string>): { topic: string; queueId: number } | Invalid {
  const topic = props[MessageConst.REAL_TOPIC];
  const qid = props[MessageConst.REAL_QID];
  if (!topic) return { invalid: "no REAL_TOPIC" };
  if (qid === undefined || !/^[0-9]{1,9}$/.test(qid)) return { invalid: `REAL_QID ${JSON.stringify(qid)}` };
  return { topic, queueId: Number(qid) };
}

/** A request that stores `rec` again under topic/queueId with `props` (the caller's final set). */
export function putRequestFromRecord(rec: DecodedRecord, topic: string, queueId: number, props: Record<string, string>): PutMessageRequest {
  const req: PutMessageRequest = {
    topic,
    queueId,
    flag: rec.flag,
    // The record is a view into a mapped segment that may be released; the store copies it
    // while appending, but the request may wait (schedule divert), so take a copy.
    body: rec.body.slice(),
    properties: encodeProperties(props),
    sysFlag: rec.sysFlag,
    bornTimestamp: rec.bornTimestamp,
    bornHost: rec.bornHost,
    reconsumeTimes: rec.reconsumeTimes,
    preparedTransactionOffset: rec.preparedTransactionOffset,
    waitStoreMsgOK: false,
  };
  setIndexedFields(req, props);
  return req;
}
