/**
 * The abuser of bench/abuse/connections.ts, in its own process so its sockets and CPU are not the
 * measured client's: `bun bench/abuse/flood.ts MODE HOST:PORT N`, runs until stdin closes, prints
 * one JSON line of counters every second.
 *
 *   idle      N connections opened and held, nothing sent (a pool that connected and waits)
 *   slowloris N connections each sending one frame a byte a second (never completes in time)
 *   partial   N connections announcing a 16 MiB frame, sending 64 KiB of it, then nothing
 *   storm     N loops connecting, sending one heartbeat-sized request, and closing, at once again
 *   paced     the same at N connections a second (open loop, at most 256 connecting at a time): a
 *             fleet of clients reconnecting, at a rate that does not depend on how fast the broker is
 */
import type { Socket } from "bun";

const [mode = "", addr = "", nArg = "0"] = process.argv.slice(2);
const [host = "127.0.0.1", portText = "0"] = addr.split(":");
const port = Number(portText);
const n = Number(nArg);
const counters = { open: 0, opened: 0, closedByServer: 0, refused: 0, bytes: 0 };
const sockets = new Set<Socket<{ mine: boolean }>>();
let stopping = false;

function frame(code: number, bodyBytes: number): Uint8Array {
  const header = new TextEncoder().encode(JSON.stringify({ code, flag: 0, language: "JAVA", opaque: 1, serializeTypeCurrentRPC: "JSON", version: 399 }));
  const out = new Uint8Array(8 + header.length + bodyBytes);
  const v = new DataView(out.buffer);
  v.setUint32(0, 4 + header.length + bodyBytes);
  v.setUint32(4, header.length);
  out.set(header, 8);
  return out;
}

async function open(): Promise<Socket<{ mine: boolean }> | undefined> {
  try {
    const s = await Bun.connect<{ mine: boolean }>({
      hostname: host,
      port,
      data: { mine: true },
      socket: {
        data: () => {},
        close: (sock) => {
          if (sockets.delete(sock)) {
            counters.open--;
            if (!stopping) counters.closedByServer++;
          }
        },
        error: () => {},
      },
    });
    sockets.add(s);
    counters.open++;
    counters.opened++;
    return s;
  } catch {
    counters.refused++;
    return undefined;
  }
}

async function openMany(count: number): Promise<Socket<{ mine: boolean }>[]> {
  const out: Socket<{ mine: boolean }>[] = [];
  for (let i = 0; i < count; i += 200) {
    const batch = await Promise.all(Array.from({ length: Math.min(200, count - i) }, open));
    for (const s of batch) if (s) out.push(s);
  }
  return out;
}

async function run(): Promise<void> {
  if (mode === "idle") await openMany(n);
  else if (mode === "slowloris") {
    const held = await openMany(n);
    const f = frame(34, 0);
    let at = 0;
    setInterval(() => {
      for (const s of held) if (sockets.has(s) && at < f.length) counters.bytes += s.write(f.subarray(at, at + 1));
      at++;
    }, 1000);
  } else if (mode === "partial") {
    const held = await openMany(n);
    const head = new Uint8Array(64 * 1024);
    new DataView(head.buffer).setUint32(0, 16 * 1024 * 1024 - 8);
    for (const s of held) counters.bytes += s.write(head);
  } else if (mode === "storm") {
    const req = frame(34, 256);
    const loop = async () => {
      while (!stopping) {
        const s = await open();
        if (s) {
          counters.bytes += s.write(req);
          s.end();
        }
        await Bun.sleep(0);
      }
    };
    for (let i = 0; i < n; i++) void loop();
  } else if (mode === "paced") {
    const req = frame(34, 256);
    let connecting = 0;
    const one = async () => {
      connecting++;
      const s = await open();
      connecting--;
      if (s) {
        counters.bytes += s.write(req);
        s.end();
      }
    };
    // Every 10 ms, the connections due by now (the timer's lateness is made up at the next tick).
    const t0 = performance.now();
    let started = 0;
    setInterval(() => {
      const due = Math.floor(((performance.now() - t0) / 1000) * n);
      while (!stopping && started < due && connecting < 256) {
        started++;
        void one();
      }
      if (started < due) started = due;
    }, 10);
  } else {
    throw new Error(`unknown mode ${mode}`);
  }
}

setInterval(() => process.stdout.write(JSON.stringify({ mode, ...counters }) + "\n"), 1000);
void run();
void (async () => {
  for await (const _ of Bun.stdin.stream()) {
    // Only the end of stdin matters.
  }
  stopping = true;
  for (const s of sockets) s.terminate();
  process.exit(0);
})();
