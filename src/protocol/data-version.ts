/**
 * RocketMQ's DataVersion: `{"counter":n,"timestamp":ms}`, the version of a broker's topic table
 * (topics.json, REGISTER_BROKER, QUERY_DATA_VERSION) and of its configuration (GET_BROKER_CONFIG).
 * The counter goes up by one and the timestamp is reset on every change; a reader compares both
 * to learn whether anything changed (docs/PROTOCOL.md §3.16).
 */
export interface DataVersion {
  readonly counter: number;
  readonly timestamp: number;
}

/** The version after a change made at `now` (Java `DataVersion.nextVersion`). */
export function nextVersion(v: DataVersion, now: number): DataVersion {
  return { counter: v.counter + 1, timestamp: now };
}

export function sameVersion(a: DataVersion, b: DataVersion): boolean {
  return a.counter === b.counter && a.timestamp === b.timestamp;
}
