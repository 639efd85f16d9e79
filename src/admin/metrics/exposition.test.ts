import { describe, expect, test } from "bun:test";
import { AssertionError } from "../../common/assert.ts";
import { escapeHelp, escapeLabelValue, Exposition, formatValue, labelText, type MetricFamily } from "./exposition.ts";
import { ALL_FAMILIES, LINT_EXCEPTIONS } from "./families.ts";
import { parseExposition } from "./test-support.ts";

const G: MetricFamily = { name: "t_gauge", type: "gauge", help: "a gauge" };
const C: MetricFamily = { name: "t_things_total", type: "counter", help: "things" };
const H: MetricFamily = { name: "t_latency_seconds", type: "histogram", help: "latency" };

describe("text format", () => {
  test("label values escape backslash, double quote and newline, and nothing else", () => {
    expect(escapeLabelValue("plain %RETRY%g|x-y")).toBe("plain %RETRY%g|x-y");
    expect(escapeLabelValue('a\\b"c\nd')).toBe('a\\\\b\\"c\\nd');
    expect(escapeLabelValue("tab\tand ünïcode")).toBe("tab\tand ünïcode");
    expect(labelText({ a: '"', b: "\\" })).toBe('{a="\\"",b="\\\\"}');
    expect(labelText({})).toBe("");
    expect(labelText({}, 'le="1"')).toBe('{le="1"}');
  });

  test("HELP escapes backslash and newline (quotes stay)", () => {
    expect(escapeHelp('x\\y\n"z"')).toBe('x\\\\y\\n"z"');
  });

  test("numbers: shortest round trip, NaN and infinities spelled as Prometheus reads them", () => {
    expect(formatValue(0)).toBe("0");
    expect(formatValue(0.1)).toBe("0.1");
    expect(formatValue(1e21)).toBe("1e+21");
    expect(formatValue(-3.5)).toBe("-3.5");
    expect(formatValue(NaN)).toBe("NaN");
    expect(formatValue(Infinity)).toBe("+Inf");
    expect(formatValue(-Infinity)).toBe("-Inf");
  });

  test("a family: HELP and TYPE once, then its samples", () => {
    const x = new Exposition();
    x.sample(G, { topic: "T" }, 1);
    x.sample(G, { topic: "U" }, 2);
    x.sample(C, {}, 3);
    expect(x.text()).toBe(
      [
        "# HELP t_gauge a gauge",
        "# TYPE t_gauge gauge",
        't_gauge{topic="T"} 1',
        't_gauge{topic="U"} 2',
        "# HELP t_things_total things",
        "# TYPE t_things_total counter",
        "t_things_total 3",
        "",
      ].join("\n"),
    );
  });

  test("histogram: cumulative buckets, +Inf = count, then _sum and _count, le last", () => {
    const x = new Exposition();
    x.histogram(
      H,
      { code: "a" },
      [
        { le: 0.5, count: 1 },
        { le: 2, count: 3 },
      ],
      4.25,
      5,
    );
    expect(x.text()).toBe(
      [
        "# HELP t_latency_seconds latency",
        "# TYPE t_latency_seconds histogram",
        't_latency_seconds_bucket{code="a",le="0.5"} 1',
        't_latency_seconds_bucket{code="a",le="2"} 3',
        't_latency_seconds_bucket{code="a",le="+Inf"} 5',
        't_latency_seconds_sum{code="a"} 4.25',
        't_latency_seconds_count{code="a"} 5',
        "",
      ].join("\n"),
    );
  });

  test("a family begun again after another is a bug of the caller", () => {
    const x = new Exposition();
    x.sample(G, {}, 1);
    x.sample(C, {}, 1);
    expect(() => x.sample(G, {}, 2)).toThrow(AssertionError);
    expect(() => x.histogram(G, {}, [], 0, 0)).toThrow(AssertionError);
  });

  test("what is written reads back: values and escaped labels", () => {
    const x = new Exposition();
    const nasty = 'q"uo\\te\nline';
    x.sample(G, { v: nasty, w: "" }, 0.25);
    x.sample(C, { a: "b" }, 7);
    const p = parseExposition(x.text());
    expect(p.samples).toEqual([
      { name: "t_gauge", labels: { v: nasty, w: "" }, value: 0.25 },
      { name: "t_things_total", labels: { a: "b" }, value: 7 },
    ]);
    expect(p.types.get("t_gauge")).toBe("gauge");
  });
});

describe("the families (the closed set of names)", () => {
  test("names and label names are valid and each name is defined once", () => {
    const names = ALL_FAMILIES.map((f) => f.name);
    expect(new Set(names).size).toBe(names.length);
    for (const f of ALL_FAMILIES) {
      expect(f.name).toMatch(/^[a-zA-Z_:][a-zA-Z0-9_:]*$/);
      for (const l of f.labels) expect(l).toMatch(/^[a-zA-Z_][a-zA-Z0-9_]*$/);
      expect(f.labels).not.toContain("le");
      expect(f.help.length).toBeGreaterThan(0);
      // Counters end in _total and nothing else does (Prometheus' naming rule, checked by promtool),
      // but for two exporter gauges (rocketmq_brokeruntime_*_total), among the lint exceptions.
      if (!LINT_EXCEPTIONS.includes(f.name)) expect(f.name.endsWith("_total")).toBe(f.type === "counter");
      if (f.type === "counter") expect(f.name.endsWith("_total")).toBe(true);
    }
  });

  test("the lint exceptions are exactly the compatibility names: the exporter's camelCase labels and suffixes, 5.x's units", () => {
    expect([...LINT_EXCEPTIONS].sort()).toEqual(
      [
        "rocketmq_broker_commitlog_diff",
        "rocketmq_broker_qps",
        "rocketmq_broker_tps",
        "rocketmq_consumer_lag_latency_milliseconds",
        "rocketmq_consumer_queueing_latency_milliseconds",
        "rocketmq_group_count",
        "rocketmq_group_diff",
        "rocketmq_group_dlqdiff",
        "rocketmq_group_retrydiff",
        "rocketmq_rpc_latency_milliseconds",
        "rocketmq_storage_message_reserve_time_milliseconds",
        ...ALL_FAMILIES.filter((f) => f.name.startsWith("rocketmq_brokeruntime_")).map((f) => f.name),
      ].sort(),
    );
  });
});
