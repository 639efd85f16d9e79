/**
 * The wire schema of apache.rocketmq.v2.MessagingService: the project's own .proto text
 * (messaging.proto, well-known.proto), embedded in the binary as text and parsed once with
 * protobufjs; from it, grpc-js's service definition (path, streaming kinds, codecs of each RPC).
 * The RPCs' TypeScript shapes are in ./messages.ts.
 */
import protobuf from "protobufjs";
import type { MethodDefinition, ServiceDefinition } from "@grpc/grpc-js";
import messagingProto from "./messaging.proto" with { type: "text" };
import wellKnownProto from "./well-known.proto" with { type: "text" };

export const PACKAGE = "apache.rocketmq.v2";
export const SERVICE_NAME = `${PACKAGE}.MessagingService`;

/** Both files in one root: messaging.proto's imports name the well-known file, whose types are then already there. */
function loadRoot(): protobuf.Root {
  const root = new protobuf.Root();
  protobuf.parse(wellKnownProto, root, { keepCase: true });
  protobuf.parse(messagingProto, root, { keepCase: true });
  root.resolveAll();
  return root;
}

export const ROOT: protobuf.Root = loadRoot();
export const SERVICE: protobuf.Service = ROOT.lookupService(SERVICE_NAME);

/** The value of a Code enum member by name (the .proto is its one home). */
export function enumValues(name: string): Readonly<Record<string, number>> {
  return ROOT.lookupEnum(`${PACKAGE}.${name}`).values;
}

/** A message type's codec: bytes → a decoded object (defaults on its prototype), a plain object → bytes. */
export interface Codec<T> {
  decode(bytes: Uint8Array): T;
  encode(value: T): Buffer;
}

export function codec<T>(typeName: string): Codec<T> {
  const type = ROOT.lookupType(typeName.includes(".") ? typeName : `${PACKAGE}.${typeName}`);
  return {
    // The decoded object has exactly the schema's fields: the one place a wire value takes its TS shape.
    decode: (bytes) => type.decode(bytes) as unknown as T,
    encode: (value) => {
      const out = type.encode(value as unknown as Record<string, unknown>).finish();
      return Buffer.from(out.buffer, out.byteOffset, out.byteLength);
    },
  };
}

/** grpc-js's definition of every RPC of the service, with the codecs from the schema. */
export function serviceDefinition(): ServiceDefinition {
  const def: Record<string, MethodDefinition<unknown, unknown>> = {};
  for (const method of SERVICE.methodsArray) {
    const req = codec<unknown>(method.resolvedRequestType!.fullName.slice(1));
    const res = codec<unknown>(method.resolvedResponseType!.fullName.slice(1));
    def[method.name] = {
      path: `/${SERVICE_NAME}/${method.name}`,
      requestStream: method.requestStream === true,
      responseStream: method.responseStream === true,
      requestSerialize: req.encode,
      requestDeserialize: req.decode,
      responseSerialize: res.encode,
      responseDeserialize: res.decode,
      originalName: method.name,
    };
  }
  return def;
}
