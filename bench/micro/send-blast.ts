/**
 * Broker send-path microbenchmark: a load generator that costs the broker nothing it would not
 * pay for a real client, and costs itself almost nothing (so the 2-core machine's second core is
 * not eaten by a full client). It pre-encodes SEND_MESSAGE_V2 frames exactly as our Producer
 * builds them (JSON header, single-letter ext fields, UNIQ_KEY/WAIT properties, 1 KiB body),
 * keeps `-w` of them in flight per connection, and counts responses by their length prefix only.
 *
 *   npx bun bench/micro/send-blast.ts --broker 127.0.0.1:10911 [--topic T] [--conns 1] [-w 32]
 *        [--size 1024] [--seconds 5] [--pid BROKER_PID]
 *
 * Prints msgs/s and, with --pid, the broker's user/system CPU per message from /proc/<pid>/stat.
 * The topic must exist (or auto-creation be on). Not a test: nothing is asserted.
 */
import { readFileSync } from "node:fs";
import { createRequest, encodeCommand, RequestCode } from "../../src/remoting/index.ts";

interface Opts {
  broker: string;
  topic: string;
  conns: number;
  inflight: number;
  size: number;
  seconds: number;
  pid: number | undefined;
  queues: number;
}

function parse(argv: string[]): Opts {
  const o: Opts = { broker: "127.0.0.1:10911", topic: "BlastTopic", conns: 1, inflight: 32, size: 1024, seconds: 5, pid: undefined, queues: 8 };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i]!;
    const v = argv[++i] ?? "";
    if (k === "--broker") o.broker = v;
    else if (k === "--topic") o.topic = v;
    else if (k === "--conns") o.conns = Number(v);
    else if (k === "-w") o.inflight = Number(v);
    else if (k === "--size") o.size = Number(v);
    else if (k === "--seconds") o.seconds = Number(v);
    else if (k === "--pid") o.pid = Number(v);
    else if (k === "--queues") o.queues = Number(v);
    else throw new Error(`unknown flag ${k}`);
  }
  return o;
}

const RING = 256;

function frames(o: Opts): Uint8Array[] {
  const out: Uint8Array[] = [];
  const body = new Uint8Array(o.size);
  for (let i = 0; i < body.length; i++) body[i] = (i * 31 + 7) & 0xff;
  for (let i = 0; i < RING; i++) {
    const uniq = `7F000001${(1000 + i).toString(16).toUpperCase().padStart(8, "0")}AB12CD34EF56${String(i).padStart(4, "0")}`;
    const props = `UNIQ_KEY\u0001${uniq}\u0002WAIT\u0001true\u0002`;
    const ext = {
      a: "blast-producer",
      b: o.topic,
      c: "TBW102",
      d: "4",
      e: String(i % o.queues),
      f: "0",
      g: String(Date.now()),
      h: "0",
      i: props,
      j: "0",
      k: "false",
    };
    out.push(encodeCommand(createRequest(RequestCode.SEND_MESSAGE_V2, ext, body)));
  }
  return out;
}

function cpuTicks(pid: number): [number, number] {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8");
  const rest = f.slice(f.lastIndexOf(")") + 2).split(" ");
  return [Number(rest[11]), Number(rest[12])];
}

const o = parse(process.argv.slice(2));
const pre = frames(o);
const [host, portText] = o.broker.split(":");
let received = 0;
let failed = 0;
let stop = false;

async function connection(): Promise<void> {
  let next = 0;
  let pending = new Uint8Array(0);
  let outstanding = 0;
  const sendSome = (sock: { write(b: Uint8Array): number }, n: number): void => {
    if (stop || n <= 0) return;
    const parts: Uint8Array[] = [];
    let len = 0;
    for (let i = 0; i < n; i++) {
      const f = pre[next++ % RING]!;
      parts.push(f);
      len += f.length;
    }
    const buf = new Uint8Array(len);
    let p = 0;
    for (const f of parts) {
      buf.set(f, p);
      p += f.length;
    }
    outstanding += n;
    sock.write(buf);
  };
  await Bun.connect({
    hostname: host!,
    port: Number(portText),
    socket: {
      open(sock) {
        sock.setNoDelay(true);
        sendSome(sock, o.inflight);
      },
      data(sock, chunk) {
        let buf: Uint8Array = pending.length ? Buffer.concat([pending, chunk]) : chunk;
        let pos = 0;
        let got = 0;
        while (buf.length - pos >= 8) {
          const len = ((buf[pos]! << 24) | (buf[pos + 1]! << 16) | (buf[pos + 2]! << 8) | buf[pos + 3]!) >>> 0;
          if (buf.length - pos - 4 < len) break;
          // "code":0 is SUCCESS; anything else counts as a failure (looked for in the header).
          const hl = ((buf[pos + 5]! << 16) | (buf[pos + 6]! << 8) | buf[pos + 7]!) >>> 0;
          const header = new TextDecoder().decode(buf.subarray(pos + 8, pos + 8 + Math.min(hl, 16)));
          if (!header.startsWith('{"code":0,')) {
            failed++;
            if (failed < 3) process.stderr.write(new TextDecoder().decode(buf.subarray(pos + 8, pos + 8 + hl)) + "\n");
          }
          pos += 4 + len;
          got++;
        }
        pending = pos < buf.length ? buf.slice(pos) : new Uint8Array(0);
        received += got;
        outstanding -= got;
        sendSome(sock, got);
      },
    },
  });
}

for (let c = 0; c < o.conns; c++) void connection();
await Bun.sleep(1000);
const t0 = performance.now();
const r0 = received;
const c0: [number, number] = o.pid ? cpuTicks(o.pid) : [0, 0];
await Bun.sleep(o.seconds * 1000);
const secs = (performance.now() - t0) / 1000;
const n = received - r0;
const line = [`msgs/s ${Math.round(n / secs)}`, `failed ${failed}`];
if (o.pid) {
  const c1 = cpuTicks(o.pid);
  const hz = 100;
  const user = ((c1[0] - c0[0]) / hz / n) * 1e6;
  const sys = ((c1[1] - c0[1]) / hz / n) * 1e6;
  line.push(`broker CPU µs/msg user ${user.toFixed(1)} sys ${sys.toFixed(1)} total ${(user + sys).toFixed(1)}`);
  const status = readFileSync(`/proc/${o.pid}/status`, "utf8");
  const kib = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  line.push(`RSS ${Math.round(kib("VmRSS") / 1024)} MiB (anon ${Math.round(kib("RssAnon") / 1024)}, file ${Math.round(kib("RssFile") / 1024)})`);
}
process.stdout.write(line.join("  ") + "\n");
stop = true;
process.exit(0);
