// The contract between the gateway and the services is the proto files under <repo>/proto, built
// by buf into one descriptor set (proto/contract.binpb, `npm run proto`). Each part loads that set
// once at start-up, from the directory its configuration names (VNM_PROTO_DIR, the repository's
// proto/ by default): grpc-js gets a package definition of it (contract.ts gives the rest).
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import type { FileRegistry } from "@bufbuild/protobuf";
import { loadDescriptors, wireDescriptors } from "./descriptors.ts";

/** The repository's proto directory: where every part reads the contract unless told otherwise. */
export const PROTO_DIR = fileURLToPath(new URL("../../../proto", import.meta.url));

/** Options shared by every grpc-js peer: names as written, int64 as exact decimal strings. */
const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: false,
  oneofs: false,
};

/**
 * The grpc-js package of the descriptor set in `source` (a proto directory, or its descriptors as
 * loadDescriptors gives them): every service of it, the health service included, and what their
 * methods carry.
 */
export function loadGrpc(source: string | FileRegistry = PROTO_DIR): grpc.GrpcObject {
  const descriptors = typeof source === "string" ? loadDescriptors(source) : source;
  const def = protoLoader.loadFileDescriptorSetFromBuffer(Buffer.from(wireDescriptors(descriptors)), LOADER_OPTIONS);
  return grpc.loadPackageDefinition(def);
}

/** Looks up a service's client constructor in a loaded grpc package by its full name. */
export function clientConstructor(pkg: grpc.GrpcObject, fullName: string): grpc.ServiceClientConstructor {
  let node: unknown = pkg;
  for (const part of fullName.split(".")) node = (node as Record<string, unknown> | undefined)?.[part];
  const ctor = node as grpc.ServiceClientConstructor | undefined;
  if (!ctor?.service) throw new Error(`no gRPC service ${fullName} in the proto files`);
  return ctor;
}
