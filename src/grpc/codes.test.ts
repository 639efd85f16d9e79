import { expect, test } from "bun:test";
import { AddressScheme, ClientType, Code, Encoding, MessageType, Permission } from "./codes.ts";
import { enumValues } from "./schema.ts";

test("every enum value the endpoint uses is the .proto's, by name", () => {
  const tables: [string, Record<string, number>][] = [
    ["Code", Code],
    ["Permission", Permission],
    ["MessageType", MessageType],
    ["ClientType", ClientType],
    ["AddressScheme", AddressScheme],
    ["Encoding", Encoding],
  ];
  for (const [name, table] of tables) {
    const proto = enumValues(name);
    for (const [k, v] of Object.entries(table)) expect([name, k, proto[k]]).toEqual([name, k, v]);
  }
});
