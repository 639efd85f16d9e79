/**
 * What a parser of untrusted input returns instead of a value it refuses: the reason, worded for
 * the response remark or log line it ends up in. Input errors are values, never exceptions
 * (docs/CONVENTIONS.md §2).
 */
export interface Invalid {
  invalid: string;
}

export function isInvalid(v: unknown): v is Invalid {
  return typeof v === "object" && v !== null && "invalid" in v;
}
