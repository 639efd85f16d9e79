/**
 * The one assertion helper (docs/CONVENTIONS.md §2). An assertion states an invariant of our own
 * code; when it fails, the code is wrong, not its input. Bad input — bytes from a socket, a file
 * being recovered, replicated bytes, an admin request — is never asserted on: it becomes an error
 * result or a problem report where it enters.
 *
 * A failure throws `AssertionError`, so a catch can tell a bug from an ordinary error: the
 * MessageStore, for one, stops taking writes on it instead of answering one request with an error
 * and carrying on.
 *
 * Cost when the condition holds: one test and a branch. Pass a constant string or an arrow that
 * builds the message; never a template literal with values in it (that string would be built on
 * every call, also when nothing is wrong). An arrow that captures nothing is allocated once.
 */

export class AssertionError extends Error {
  override name = "AssertionError";
}

export function assert(cond: unknown, message: string | (() => string)): asserts cond {
  if (!cond) fail(message);
}

/** Out of line, so the hot caller stays a compare and a branch. */
function fail(message: string | (() => string)): never {
  throw new AssertionError(`invariant violated: ${typeof message === "string" ? message : message()}`);
}
