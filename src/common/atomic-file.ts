/**
 * Crash-safe small files: write `<path>.tmp`, fsync it, keep the previous version as `<path>.bak`,
 * rename over `<path>`, fsync the directory. A crash leaves either the old or the new file whole,
 * never half of one. Readers fall back to `.bak` when the main file is missing or unparsable.
 */
import { closeSync, copyFileSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from "node:fs";
import { promises as fsp } from "node:fs";
import { dirname } from "node:path";

export function writeFileAtomic(path: string, data: string | Uint8Array): void {
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true });
  const tmp = `${path}.tmp`;
  const fd = openSync(tmp, "w");
  try {
    writeSync(fd, typeof data === "string" ? Buffer.from(data) : data);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  if (existsSync(path)) copyFileSync(path, `${path}.bak`);
  renameSync(tmp, path);
  try {
    const dfd = openSync(dir, "r");
    try {
      fsyncSync(dfd);
    } finally {
      closeSync(dfd);
    }
  } catch {
    // Some filesystems refuse fsync on a directory; the rename itself is still atomic.
  }
}

/** writeFileAtomic with every syscall on the thread pool: for periodic writes on a busy broker. */
export async function writeFileAtomicAsync(path: string, data: string | Uint8Array): Promise<void> {
  const dir = dirname(path);
  await fsp.mkdir(dir, { recursive: true });
  // Its own temp name: a synchronous write of the same file (shutdown) never shares an inode with
  // it. Callers still run one write of a path at a time and await it before a final sync one.
  const tmp = `${path}.tmp-async`;
  const fh = await fsp.open(tmp, "w");
  try {
    await fh.writeFile(typeof data === "string" ? Buffer.from(data) : data);
    await fh.datasync();
  } finally {
    await fh.close();
  }
  if (existsSync(path)) await fsp.copyFile(path, `${path}.bak`);
  await fsp.rename(tmp, path);
  try {
    const dh = await fsp.open(dir, "r");
    try {
      await dh.sync();
    } finally {
      await dh.close();
    }
  } catch {
    // As in writeFileAtomic: a filesystem that refuses a directory fsync still renames atomically.
  }
}

/**
 * Reads `path`, or `<path>.bak` if the main file is missing or `parse` rejects it.
 * Returns null when neither exists; throws only when a file exists and neither copy parses.
 */
export function readFileWithBackup<T>(path: string, parse: (text: string) => T): T | null {
  let firstError: unknown = null;
  for (const p of [path, `${path}.bak`]) {
    if (!existsSync(p)) continue;
    try {
      return parse(readFileSync(p, "utf8"));
    } catch (e) {
      firstError ??= e;
    }
  }
  if (firstError !== null) throw firstError;
  return null;
}

/** File-system errors in an operator's words, by errno code. */
const FS_ERROR_WORDS: Record<string, string> = {
  ENOENT: "no such file",
  EISDIR: "it is a directory",
  ENOTDIR: "a parent path is a regular file, not a directory",
  EEXIST: "a file with that name exists and is not a directory",
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  EROFS: "read-only file system",
  ENOSPC: "no space left on device",
};

/** A file-system error in words, with its code ("no such file", "ENOENT"); the error's own message when the code is not one of ours. */
export function fsErrorWords(e: unknown): { words: string; code?: string } {
  const code = (e as { code?: string }).code;
  const words = code !== undefined ? FS_ERROR_WORDS[code] : undefined;
  return words !== undefined ? { words, code: code! } : { words: e instanceof Error ? e.message : String(e) };
}

/** A file's text, or why it cannot be read in an operator's words ("no such file", …). */
export function readTextFile(path: string): { text: string } | { error: string } {
  try {
    return { text: readFileSync(path, "utf8") };
  } catch (e) {
    return { error: fsErrorWords(e).words };
  }
}
