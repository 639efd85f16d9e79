/**
 * Invariant checks for *bugs*, never for input. Bytes from a socket, a file or YAML are validated
 * into typed values or reason strings; an `assert` that fires means our own code is wrong, so the
 * process should stop (systemd restarts it and recovery runs).
 */
export class AssertionError extends Error {
  override name = "AssertionError";
}

export function assert(condition: unknown, message = "assertion failed"): asserts condition {
  if (!condition) throw new AssertionError(message);
}
