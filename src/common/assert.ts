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
 * Cost when the condition holds: a test and a branch, nothing allocated. So the message is a
 * constant; values go in as details, each substituted for a `{}` only when the assertion fails:
 *
 *   assert(expected === at, "queue {}-{}: offset {} put at its end {}", topic, queueId, offset, end);
 *
 * A template literal would build its string on every call, and an arrow that captures variables
 * is a new closure on every call (JSC sinks such allocations only in its FTL tier, which
 * src/runtime-tuning.ts turns off); a function message is for cold paths only.
 */

export class AssertionError extends Error {
  override name = "AssertionError";
}

/** A value shown in a failed assertion's message. */
export type AssertDetail = string | number | bigint | boolean | null | undefined;

export function assert(
  cond: unknown,
  message: string | (() => string),
  a?: AssertDetail,
  b?: AssertDetail,
  c?: AssertDetail,
  d?: AssertDetail,
): asserts cond {
  if (!cond) fail(message, [a, b, c, d]);
}

/** Out of line, so the hot caller stays a compare and a branch. */
function fail(message: string | (() => string), details: AssertDetail[]): never {
  let text = typeof message === "string" ? message : message();
  let i = 0;
  text = text.replace(/\{\}/g, () => String(details[i++]));
  throw new AssertionError(`invariant violated: ${text}`);
}
