/**
 * The dashboard (README "Dashboard"): server-rendered pages under /ui/ (`/` sends there), their embedded
 * static files, and the JSON the pages need that the rest of the API does not give:
 *
 *   GET /ui/ /ui/topics[/:topic] /ui/groups[/:group] /ui/clients /ui/messages /ui/dlq
 *       /ui/transactions /ui/charts /ui/config        pages (HTML; broker pages where a broker runs)
 *   GET /ui/login                                   token form (open; see ../auth.ts)
 *   GET /ui/assets/:name                            embedded script and style files (open)
 *   GET /ui/session                                 200 when the request carries the token (the login form checks with it)
 *   GET /clients                                    broker: producer and consumer groups, their connections
 *   GET /stats/history                              broker: the last hour of rates and lag (../dashboard/sampler.ts)
 *
 * Every change the pages make goes through the API's own write endpoints from dashboard.js
 * (reset-offset, POST /messages, PATCH /config), with the token as the Authorization header.
 */
import { type Context, Hono } from "hono";
import type { Child } from "hono/jsx";
import type { BrokerInfo } from "../../broker/index.ts";
import { MessageConst } from "../../broker/index.ts";
import type { NamesrvInfo } from "../../namesrv/index.ts";
import { ASSETS } from "../dashboard/assets.ts";
import { configEntries, dlqTopics, groupRows, namesrvAddrs, topicRow, topicRows } from "../dashboard/data.ts";
import { DASHBOARD_CSP, Layout, type PageFrame } from "../dashboard/layout.tsx";
import { ClientsPage } from "../dashboard/pages/clients.tsx";
import { ClusterPage } from "../dashboard/pages/cluster.tsx";
import { GroupPage, GroupsPage } from "../dashboard/pages/groups.tsx";
import { DlqPage, MessagesPage } from "../dashboard/pages/messages.tsx";
import { ChartsPage, ConfigPage, LoginPage, TransactionsPage } from "../dashboard/pages/process.tsx";
import { TopicPage, TopicsPage } from "../dashboard/pages/topics.tsx";
import { TrafficSampler } from "../dashboard/sampler.ts";
import { ApiError } from "../errors.ts";

export interface DashboardDeps {
  role: string;
  version: string;
  namesrv?: NamesrvInfo;
  broker?: BrokerInfo;
  config?: () => unknown;
  token?: () => string;
}

type Render = (c: Context, frame: Omit<PageFrame, "process" | "loggedIn">, body: Child) => Response | Promise<Response>;

function renderer(deps: DashboardDeps): Render {
  return (c, frame, body) => {
    c.header("Content-Security-Policy", DASHBOARD_CSP);
    c.header("X-Content-Type-Options", "nosniff");
    c.header("Referrer-Policy", "no-referrer");
    c.header("Cache-Control", "no-store");
    const process = { role: deps.role, version: deps.version, hasBroker: deps.broker !== undefined };
    const page = <Layout frame={{ ...frame, process, loggedIn: (deps.token?.() ?? "") !== "" }}>{body}</Layout>;
    return c.html(`<!doctype html>${String(page)}`);
  };
}

function commonPages(app: Hono, deps: DashboardDeps, render: Render): void {
  app.get("/", (c) => c.redirect("/ui/", 302));
  app.get("/ui", (c) => c.redirect("/ui/", 302));
  app.get("/ui/assets/:name", (c) => {
    const a = ASSETS[c.req.param("name")];
    if (!a) throw new ApiError("NOT_FOUND", { path: c.req.path });
    c.header("Content-Type", a.contentType);
    c.header("Cache-Control", "public, max-age=86400, immutable");
    c.header("X-Content-Type-Options", "nosniff");
    return c.body(a.body);
  });
  app.get("/ui/login", (c) =>
    render(c, { title: "Log in", nav: "", script: "login" }, <LoginPage tokenConfigured={(deps.token?.() ?? "") !== ""} />),
  );
  app.get("/ui/session", (c) => c.json({ ok: true }));
  app.get("/ui/", (c) => {
    const described = deps.config?.();
    const b = deps.broker;
    const n = deps.namesrv;
    const d = {
      namesrvAddrs: [...(n ? ["this process (its name server)"] : []), ...namesrvAddrs(described)],
      ...(n ? { namesrv: { cluster: n.cluster(), live: n.brokers() } } : {}),
      ...(b ? { broker: { settings: b.settings(), replication: b.replication(), store: b.store() } } : {}),
    };
    return render(c, { title: "Cluster", nav: "/ui/" }, <ClusterPage d={d} />);
  });
  app.get("/ui/config", (c) => {
    const { file, entries } = configEntries(deps.config?.());
    return render(c, { title: "Configuration", nav: "/ui/config", script: "config" }, <ConfigPage file={file} entries={entries} />);
  });
}

function brokerPages(app: Hono, b: BrokerInfo, sampler: TrafficSampler, render: Render): void {
  app.get("/clients", (c) => c.json(b.clients()));
  app.get("/stats/history", (c) => c.json(sampler.history()));
  app.get("/ui/topics", (c) => {
    const all = c.req.query("all") === "1";
    return render(c, { title: "Topics", nav: "/ui/topics" }, <TopicsPage topics={topicRows(b, all, sampler.history())} showSystem={all} />);
  });
  app.get("/ui/topics/:topic", (c) => {
    const name = c.req.param("topic");
    const config = b.topic(name);
    if (!config) throw new ApiError("TOPIC_NOT_FOUND", { topic: name });
    const groups = groupRows(b)
      .map((g) => ({ group: g.group, queues: g.queues.filter((q) => q.topic === name) }))
      .filter((g) => g.queues.length > 0);
    return render(c, { title: `Topic ${name}`, nav: "/ui/topics" }, <TopicPage topic={topicRow(b, config, sampler.history())} groups={groups} />);
  });
  app.get("/ui/groups", (c) => render(c, { title: "Consumer groups", nav: "/ui/groups" }, <GroupsPage groups={groupRows(b)} />));
  app.get("/ui/groups/:group", (c) => {
    const group = c.req.param("group");
    const g = groupRows(b).find((r) => r.group === group);
    if (!g) throw new ApiError("GROUP_NOT_FOUND", { group });
    return render(c, { title: `Consumer group ${group}`, nav: "/ui/groups", script: "group" }, <GroupPage g={g} />);
  });
  app.get("/ui/clients", (c) => render(c, { title: "Producers and connections", nav: "/ui/clients" }, <ClientsPage v={b.clients()} />));
  app.get("/ui/messages", (c) => {
    const topics = b
      .topics()
      .map((t) => t.topicName)
      .sort();
    return render(c, { title: "Messages", nav: "/ui/messages", script: "messages" }, <MessagesPage topics={topics} />);
  });
  app.get("/ui/dlq", (c) => {
    const dlq = dlqTopics(b);
    const selected = dlq.find((d) => d.group === c.req.query("group"));
    const reserved = Object.values(MessageConst);
    const page = <DlqPage dlq={dlq} reserved={reserved} {...(selected ? { selected } : {})} />;
    return render(c, { title: "Dead letters", nav: "/ui/dlq", script: "dlq" }, page);
  });
  app.get("/ui/transactions", (c) => render(c, { title: "Transactions", nav: "/ui/transactions" }, <TransactionsPage t={b.transactions()} />));
  app.get("/ui/charts", (c) => render(c, { title: "Throughput and lag", nav: "/ui/charts", script: "charts", charts: true }, <ChartsPage />));
}

/**
 * The dashboard's routes. `sampler` is started by ./app.ts when the process starts (the admin API
 * itself is built on its first request), so the charts cover the hour before the first visit.
 */
export function dashboardRoutes(deps: DashboardDeps, sampler: TrafficSampler | undefined): Hono {
  const app = new Hono();
  const render = renderer(deps);
  commonPages(app, deps, render);
  if (deps.broker && sampler) brokerPages(app, deps.broker, sampler, render);
  return app;
}
