/**
 * Java and Maven for the interop suites: whether the tools are here (skip with one printed line on
 * a laptop without them, fail under CI=true), classpaths built by Maven from the small projects in
 * test/interop/java/ (artifacts come from Maven Central on the first run, the local repository
 * after), and free loopback ports for processes that need fixed ones (Apache RocketMQ's broker
 * derives its VIP port as listen − 2 and its HA port as listen + 1, as the Java client does).
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "./binary.ts";

export const JAVA_DIR = join(ROOT, "test", "interop", "java");

/**
 * True when every tool is on the PATH. Otherwise prints one line naming the suite and what is
 * missing and returns false, or throws under CI=true, where a skipped suite would hide a failure.
 */
export function toolsPresent(suite: string, tools: string[]): boolean {
  const missing = tools.filter((t) => Bun.which(t) === null);
  if (missing.length === 0) return true;
  const line = `${suite}: skipped, ${missing.join(", ")} not on the PATH`;
  if (process.env.CI === "true") throw new Error(`${line} (CI=true: the suite must run)`);
  console.log(line);
  return false;
}

const built = new Map<string, string>();

/**
 * Compiles the Maven project in test/interop/java/<name> (if it has sources) and returns its
 * runtime classpath (target/classes first). Cached per process, and on disk while pom.xml and the
 * sources are older than the last build. `base` names another folder of projects (the
 * benchmarks keep theirs beside their code, e.g. bench/failover/apache5). The projects in
 * test/interop/java share one src/ beside them; a project elsewhere keeps its sources in its own src/.
 */
export function mavenClasspath(name: string, base = JAVA_DIR): string {
  const dir = join(base, name);
  const cached = built.get(dir);
  if (cached !== undefined) return cached;
  const cpFile = join(dir, "target", "classpath.txt");
  const classes = join(dir, "target", "classes");
  const hasSources = readFileSync(join(dir, "pom.xml"), "utf8").includes("<sourceDirectory>");
  const srcDir = base === JAVA_DIR ? join(JAVA_DIR, "src") : join(dir, "src");
  if (!existsSync(cpFile) || statSync(cpFile).mtimeMs < newestInputMtime(dir, hasSources ? srcDir : null)) {
    const goals = hasSources ? ["compile", "dependency:build-classpath"] : ["dependency:build-classpath"];
    const r = Bun.spawnSync(["mvn", "-q", "-B", ...goals, `-Dmdep.outputFile=${cpFile}`], { cwd: dir, stdout: "pipe", stderr: "pipe" });
    if (r.exitCode !== 0) throw new Error(`mvn in ${dir} failed (${r.exitCode}):\n${r.stdout.toString()}\n${r.stderr.toString()}`);
  }
  const deps = readFileSync(cpFile, "utf8").trim();
  const cp = hasSources ? `${classes}:${deps}` : deps;
  built.set(dir, cp);
  return cp;
}

function newestInputMtime(dir: string, srcDir: string | null): number {
  let newest = statSync(join(dir, "pom.xml")).mtimeMs;
  if (srcDir) {
    for (const f of new Bun.Glob("**/*.java").scanSync({ cwd: srcDir })) {
      newest = Math.max(newest, statSync(join(srcDir, f)).mtimeMs);
    }
  }
  return newest;
}

/** Flags every JVM of the suites gets: small heaps (two cores, many JVMs) and the module opens RocketMQ 4.x needs on Java 17. */
export const JVM_FLAGS = [
  "-XX:+UseSerialGC",
  "-XX:TieredStopAtLevel=1",
  "-Xss512k",
  "--add-opens=java.base/java.nio=ALL-UNNAMED",
  "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
  "--add-opens=java.base/java.lang=ALL-UNNAMED",
  "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
  "--add-opens=java.base/java.util=ALL-UNNAMED",
];

function portFree(port: number): boolean {
  try {
    const s = Bun.listen({ hostname: "127.0.0.1", port, socket: { data() {} } });
    s.stop(true);
    return true;
  } catch {
    return false;
  }
}

/** A port p with p-2 .. p+1 free on 127.0.0.1 (a broker's VIP, listen and HA ports), away from the ephemeral range. */
export function freeBrokerPort(): number {
  for (let i = 0; i < 200; i++) {
    const p = 20_000 + Math.floor(Math.random() * 12_000);
    if ([p - 2, p - 1, p, p + 1].every(portFree)) return p;
  }
  throw new Error("no free block of 4 ports on 127.0.0.1");
}

export function freePort(): number {
  for (let i = 0; i < 200; i++) {
    const p = 20_000 + Math.floor(Math.random() * 12_000);
    if (portFree(p)) return p;
  }
  throw new Error("no free port on 127.0.0.1");
}
