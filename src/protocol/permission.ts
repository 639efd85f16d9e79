/**
 * Permission bits of a topic, a queue route and a broker (Java `PermName`), as they travel in
 * topics.json, REGISTER_BROKER bodies, TopicRouteData and UPDATE_AND_CREATE_TOPIC headers
 * (docs/STORAGE.md §8, docs/PROTOCOL.md §3.10). The one definition for the broker, the name server and the client.
 *
 *   bit   3 PRIORITY   2 READ   1 WRITE   0 INHERIT
 *   value 8            4        2         1          (a normal topic: READ | WRITE = 6)
 */
/** Permission bits (Java `PermName`). Normal topics use READ | WRITE = 6. */
export const PermName = {
  PRIORITY: 8,
  READ: 4,
  WRITE: 2,
  INHERIT: 1,
} as const;

export function isReadable(perm: number): boolean {
  return (perm & PermName.READ) === PermName.READ;
}

export function isWriteable(perm: number): boolean {
  return (perm & PermName.WRITE) === PermName.WRITE;
}

export function isInherited(perm: number): boolean {
  return (perm & PermName.INHERIT) === PermName.INHERIT;
}
