/**
 * The admin HTTP API's bearer token, from `admin.token` or from the file `admin.tokenFile` names
 * (its content trimmed: an editor's trailing newline is not part of the token). The file is read
 * at start and at every SIGHUP, so a rotated token takes effect without a restart. "" = no token.
 */
import { readFileSync } from "node:fs";
import { checkValue, keyDef, type Config } from "./schema.ts";

export function resolveAdminToken(admin: Config["admin"]): string | { invalid: string } {
  if (admin.tokenFile === "") return admin.token;
  let text: string;
  try {
    text = readFileSync(admin.tokenFile, "utf8").trim();
  } catch (e) {
    return { invalid: `cannot read ${admin.tokenFile}: ${e instanceof Error ? e.message : String(e)}` };
  }
  if (text === "") return { invalid: `${admin.tokenFile} is empty (remove admin.tokenFile to run without a token)` };
  const checked = checkValue(keyDef("admin.token")!, text);
  if (!checked.ok) return { invalid: `the token in ${admin.tokenFile}: ${checked.problem}` };
  return text;
}
