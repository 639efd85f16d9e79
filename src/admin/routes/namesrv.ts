/** Name server routes: cluster view, live brokers, topics and their routes, request stats. */
import { Hono } from "hono";
import type { NamesrvInfo } from "../../namesrv/index.ts";
import { ApiError } from "../errors.ts";

export function namesrvRoutes(info: NamesrvInfo): Hono {
  const app = new Hono();
  app.get("/cluster", (c) => c.json(info.cluster()));
  app.get("/brokers", (c) => c.json({ brokers: info.brokers() }));
  app.get("/topics", (c) => c.json({ topics: info.topics() }));
  app.get("/stats/requests", (c) => c.json(info.requestStats()));
  app.get("/topics/:topic/route", (c) => {
    const topic = c.req.param("topic");
    const route = info.topicRoute(topic);
    if (!route) throw new ApiError("TOPIC_NOT_EXIST", { topic });
    return c.json(route);
  });
  return app;
}
