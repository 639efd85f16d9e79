/** Broker routes: topics with queue offsets, consumer group offsets and lag, store status, request stats. */
import { Hono } from "hono";
import type { BrokerInfo } from "../../broker/index.ts";
import { ApiError } from "../errors.ts";

export function brokerRoutes(info: BrokerInfo): Hono {
  const app = new Hono();
  app.get("/broker", (c) => c.json({ ...info.settings(), storeHost: undefined, store: info.store() }));
  app.get("/topics", (c) => c.json({ topics: info.topics() }));
  app.get("/topics/:topic", (c) => {
    const topic = c.req.param("topic");
    const cfg = info.topic(topic);
    if (!cfg) throw new ApiError("TOPIC_NOT_FOUND", { topic });
    return c.json({ ...cfg, queues: info.queueOffsets(topic) });
  });
  app.get("/groups", (c) => c.json({ groups: info.consumerGroups() }));
  app.get("/ha", (c) => c.json(info.replication()));
  app.get("/transactions", (c) => c.json(info.transactions()));
  app.get("/stats/requests", (c) => c.json(info.requestStats()));
  app.get("/groups/:group", (c) => {
    const group = c.req.param("group");
    const offsets = info.groupOffsets(group);
    if (offsets.length === 0 && !info.consumerGroups().includes(group)) throw new ApiError("GROUP_NOT_FOUND", { group });
    return c.json({ group, queues: offsets, totalLag: offsets.reduce((n, q) => n + q.lag, 0) });
  });
  return app;
}
