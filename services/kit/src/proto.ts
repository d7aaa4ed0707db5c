// The proto files under <repo>/proto are the contract between the gateway and the services.
// Both sides load them once at start-up: grpc-js gets a package definition, the gateway also
// gets a protobufjs Root for reflection over options (HTTP bindings, field behaviours, links).
import { readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import protobuf from "protobufjs";

const require = createRequire(import.meta.url);

export const PROTO_DIR = process.env["VNM_PROTO_DIR"] ?? fileURLToPath(new URL("../../../proto", import.meta.url));

/** Options shared by every grpc-js peer: names as written, int64 as exact decimal strings. */
export const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: false,
  oneofs: false,
  includeDirs: [PROTO_DIR],
};

/** Every .proto below proto/vnm, as paths relative to the proto directory. */
export function vnmProtoFiles(dir = PROTO_DIR): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith(".proto")) out.push(relative(dir, p).split(sep).join("/"));
    }
  };
  walk(join(dir, "vnm"));
  return out;
}

export function loadGrpc(files: string[] = vnmProtoFiles()): grpc.GrpcObject {
  const def = protoLoader.loadSync([...files, "grpc/health/v1/health.proto"], LOADER_OPTIONS);
  return grpc.loadPackageDefinition(def);
}

let shared: grpc.GrpcObject | undefined;

/** The gRPC package of every vnm proto, loaded once per process. */
export function grpcPackage(): grpc.GrpcObject {
  shared ??= loadGrpc();
  return shared;
}

/** A protobufjs Root with every vnm proto resolved, for reading options. */
export function loadReflection(files: string[] = vnmProtoFiles()): protobuf.Root {
  const root = new protobuf.Root();
  const descriptorProto = require.resolve("protobufjs/google/protobuf/descriptor.proto");
  root.resolvePath = (_origin, target) => {
    if (target === "google/protobuf/descriptor.proto") return descriptorProto;
    // Well-known types protobufjs carries itself (empty.proto, ...).
    if (target.startsWith("google/protobuf/")) return target;
    return target.startsWith("/") ? target : join(PROTO_DIR, target);
  };
  // `//` comments too, not only `/** */` blocks: they describe the API (GET /openapi.json).
  root.loadSync(files, { keepCase: true, alternateCommentMode: true });
  root.resolveAll();
  return root;
}

/** Looks up a service's client constructor in a loaded grpc package by its full name. */
export function clientConstructor(pkg: grpc.GrpcObject, fullName: string): grpc.ServiceClientConstructor {
  let node: unknown = pkg;
  for (const part of fullName.split(".")) node = (node as Record<string, unknown> | undefined)?.[part];
  const ctor = node as grpc.ServiceClientConstructor | undefined;
  if (!ctor?.service) throw new Error(`no gRPC service ${fullName} in the proto files`);
  return ctor;
}
