/**
 * `config/messageRequestMode.json`: the consume mode (PULL or POP) set per (topic, group) by
 * SET_MESSAGE_REQUEST_MODE, read by QUERY_ASSIGNMENT, and also the GET_ALL_MESSAGE_REQUEST_MODE
 * body a slave copies (docs/PROTOCOL.md §3.22, docs/STORAGE.md §5). Java's
 * `MessageRequestModeManager`, with its file name and shape:
 *
 *   {"messageRequestModeMap":{"T":{"G":{"consumerGroup":"G","mode":"POP","popShareQueueNum":0,"topic":"T"}}}}
 *
 * Unlike topics.json it carries no dataVersion (neither does Java's). A (topic, group) without an
 * entry takes the broker's defaults (broker.defaultMessageRequestMode, defaultPopShareQueueNum).
 *
 * Invariants: every entry's `topic` and `consumerGroup` equal its two keys; a change is on disk
 * before it is visible in memory (a write error, thrown, leaves both as they were). Loading never
 * throws on bad content; the load outcomes are metadata-file.ts's table.
 */
import { isInvalid, type Invalid } from "../common/invalid.ts";
import {
  decodeSetMessageRequestModeBody,
  setMessageRequestModeJson,
  type MessageRequestModeSerializeWrapper,
  type SetMessageRequestModeRequestBody,
} from "../protocol/message-request-mode.ts";
import {
  configPath,
  entryProblem,
  isJsonObject,
  loadConfigFile,
  persistConfigFile,
  show,
  type Decoded,
  type LoadedFrom,
  type MetadataOptions,
} from "./metadata-file.ts";

export const MESSAGE_REQUEST_MODE_FILE = "messageRequestMode.json";

/** topic → group → entry. */
type ModeTable = Map<string, Map<string, SetMessageRequestModeRequestBody>>;

const TABLE_KEY = "messageRequestModeMap";

/** The top level decides whether the copy is usable; each entry is checked on its own. */
export function decodeModeTable(raw: unknown): Decoded<ModeTable> | Invalid {
  if (!isJsonObject(raw)) return { invalid: "expected a JSON object at the top level" };
  const table = raw[TABLE_KEY] ?? {};
  if (!isJsonObject(table)) return { invalid: `${TABLE_KEY}: expected an object, got ${show(table)}` };
  const problems: string[] = [];
  const out: ModeTable = new Map();
  for (const [topic, groups] of Object.entries(table)) {
    if (!isJsonObject(groups)) {
      problems.push(`${TABLE_KEY}.${topic}: expected an object, got ${show(groups)}; entry skipped`);
      continue;
    }
    for (const [group, entry] of Object.entries(groups)) {
      const at = `${TABLE_KEY}.${topic}.${group}`;
      const e = decodeSetMessageRequestModeBody(entry);
      if (isInvalid(e)) problems.push(`${entryProblem(at, e.invalid)}; entry skipped`);
      else if (e.topic !== topic || e.consumerGroup !== group) {
        problems.push(`${at}: names ${show(e.topic)}/${show(e.consumerGroup)}, not its keys; entry skipped`);
      } else {
        const byGroup = out.get(topic) ?? new Map<string, SetMessageRequestModeRequestBody>();
        byGroup.set(group, Object.freeze(e));
        out.set(topic, byGroup);
      }
    }
  }
  return { value: out, problems };
}

function tableBody(table: ModeTable): MessageRequestModeSerializeWrapper {
  // Object.fromEntries keeps a key like "__proto__" a plain key.
  return {
    messageRequestModeMap: Object.fromEntries(
      [...table].map(([topic, groups]) => [topic, Object.fromEntries([...groups].map(([g, e]) => [g, setMessageRequestModeJson(e)]))]),
    ),
  };
}

export class MessageRequestModeManager {
  readonly #path: string;
  #table: ModeTable = new Map();
  #loadedFrom: LoadedFrom = "none";

  constructor(opts: MetadataOptions) {
    this.#path = configPath(opts.dir, MESSAGE_REQUEST_MODE_FILE);
  }

  /** Reads the file (or its .bak), merged over what is in memory. Returns problems; see `loadedFrom`. */
  load(): string[] {
    const r = loadConfigFile(this.#path, decodeModeTable);
    this.#loadedFrom = r.from;
    if (r.value !== null) {
      const next = new Map(this.#table);
      for (const [topic, groups] of r.value) next.set(topic, new Map([...(next.get(topic) ?? []), ...groups]));
      this.#table = next;
    }
    return r.problems;
  }

  get loadedFrom(): LoadedFrom {
    return this.#loadedFrom;
  }

  get(topic: string, group: string): SetMessageRequestModeRequestBody | undefined {
    return this.#table.get(topic)?.get(group);
  }

  /** Stores one (topic, group)'s entry, replacing any; written before it is visible. */
  set(entry: SetMessageRequestModeRequestBody): void {
    const next = new Map(this.#table);
    next.set(entry.topic, new Map([...(next.get(entry.topic) ?? []), [entry.consumerGroup, Object.freeze({ ...entry })]]));
    this.#commit(next);
  }

  /** The GET_ALL_MESSAGE_REQUEST_MODE body and the file's content. */
  wrapper(): MessageRequestModeSerializeWrapper {
    return tableBody(this.#table);
  }

  /**
   * A slave adopting its master's GET_ALL_MESSAGE_REQUEST_MODE body (Java
   * `SlaveSynchronize.syncMessageRequestMode`): the table is replaced wholesale, so a topic the
   * master no longer has is dropped; written only when it differs. A malformed top level changes
   * nothing; bad entries are skipped. Returns problems.
   */
  replaceAll(body: unknown): string[] {
    const label = "message request mode body";
    const d = decodeModeTable(body);
    if (isInvalid(d)) return [`${label}: ${d.invalid}; nothing changed`];
    if (JSON.stringify(tableBody(d.value)) !== JSON.stringify(this.wrapper())) this.#commit(d.value);
    return d.problems.map((p) => `${label}: ${p}`);
  }

  #commit(next: ModeTable): void {
    persistConfigFile(this.#path, tableBody(next));
    this.#table = next;
  }
}
