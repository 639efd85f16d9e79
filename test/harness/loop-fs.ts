/**
 * A small ext4 filesystem on a loop device, mounted in a temp dir (root only), and a power cut of
 * it. The cut is the kernel's filesystem shutdown (FS_IOC_SHUTDOWN with
 * EXT4_GOING_FLAGS_NOLOGFLUSH, what xfstests' `godown` does): from that instant nothing more reaches
 * the device — dirty pages in the page cache are dropped, the journal is not flushed — and the
 * next mount replays the journal. What survives is what had reached the device, which always
 * includes everything fdatasync'd. `echo 3 > /proc/sys/vm/drop_caches` would not do: it writes
 * dirty pages back before dropping them, so nothing is lost.
 *
 * Not modelled: a disk's own volatile write cache or torn sectors (the loop device's writes land in
 * the host's page cache of the image file, and stay there). The simulation's torn-write model
 * (test/sim/disk.ts) covers those.
 */
import { closeSync, existsSync, mkdirSync, openSync, rmSync } from "node:fs";
import { dlopen, FFIType, ptr } from "bun:ffi";
import { join } from "node:path";
import { tempDir } from "./binary.ts";

/** _IOR('X', 125, __u32), linux/fs.h. */
const FS_IOC_SHUTDOWN = 0x8004587d;
/** linux/fs.h FS_SHUTDOWN_FLAGS_NOLOGFLUSH: the journal is not flushed either. */
const SHUTDOWN_NOLOGFLUSH = 2;

function run(argv: string[]): string {
  const r = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${argv.join(" ")} failed (${r.exitCode}): ${r.stderr.toString()}`);
  return r.stdout.toString().trim();
}

/** Why a loop-mounted filesystem cannot be made here, or undefined when it can. */
export function loopFsUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return "not root";
  const missing = ["losetup", "mkfs.ext4", "mount", "umount"].filter((t) => Bun.which(t) === null);
  if (missing.length > 0) return `${missing.join(", ")} not on the PATH`;
  return existsSync("/dev/loop-control") ? undefined : "no /dev/loop-control (loop devices)";
}

function shutdownIoctl(fd: number): number {
  const libc = dlopen("libc.so.6", { ioctl: { args: [FFIType.i32, FFIType.u64, FFIType.ptr], returns: FFIType.i32 } });
  try {
    const flags = new Uint32Array([SHUTDOWN_NOLOGFLUSH]);
    return libc.symbols.ioctl(fd, FS_IOC_SHUTDOWN, ptr(flags));
  } finally {
    libc.close();
  }
}

export class LoopFs implements AsyncDisposable {
  /** Power cuts so far. */
  cuts = 0;

  private constructor(
    readonly home: string,
    readonly image: string,
    readonly device: string,
    /** The mount point. */
    readonly dir: string,
  ) {}

  /** A sparse image of `mib` MiB, formatted ext4 (default data=ordered) and mounted. */
  static create(mib: number): LoopFs {
    const home = tempDir("rocketbun-loopfs-");
    const image = join(home, "fs.img");
    const dir = join(home, "mnt");
    mkdirSync(dir);
    run(["truncate", "-s", `${mib}M`, image]);
    run(["mkfs.ext4", "-q", "-F", image]);
    let device = "";
    try {
      device = run(["losetup", "-f", "--show", image]);
      run(["mount", "-t", "ext4", device, dir]);
    } catch (e) {
      if (device) Bun.spawnSync(["losetup", "-d", device]);
      rmSync(home, { recursive: true, force: true });
      throw e;
    }
    return new LoopFs(home, image, device, dir);
  }

  /**
   * The power cut: shut the filesystem down without flushing anything, unmount, mount again
   * (journal replay). Every process with a file open on it must have exited.
   */
  powerCut(): void {
    const fd = openSync(this.dir, "r");
    try {
      if (shutdownIoctl(fd) !== 0) throw new Error(`FS_IOC_SHUTDOWN on ${this.dir} failed`);
    } finally {
      closeSync(fd);
    }
    run(["umount", this.dir]);
    run(["mount", "-t", "ext4", this.device, this.dir]);
    this.cuts++;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    Bun.spawnSync(["umount", this.dir]);
    Bun.spawnSync(["losetup", "-d", this.device]);
    rmSync(this.home, { recursive: true, force: true });
  }
}
