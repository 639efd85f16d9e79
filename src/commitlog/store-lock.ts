/**
 * One process per store: `<store>/lock` holds the owner's pid; a dead owner's lock is taken over
 * (a crashed broker must restart on its store without an operator).
 */
import type { StoreDisk } from "./disk.ts";

export function acquireLock(disk: StoreDisk, path: string): void {
  const held = disk.readFile(path);
  if (held !== null) {
    const pid = Number(new TextDecoder().decode(held).trim());
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && processAlive(pid)) {
      throw new Error(`store ${path.replace(/\/lock$/, "")} is in use by process ${pid}`);
    }
  }
  disk.writeFile(path, String(process.pid));
}

export function releaseLock(disk: StoreDisk, path: string): void {
  try {
    const held = disk.readFile(path);
    if (held !== null && new TextDecoder().decode(held).trim() === String(process.pid)) disk.unlink(path);
  } catch {
    // Already gone.
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as { code?: string }).code === "EPERM";
  }
}
