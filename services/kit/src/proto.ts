// The contract between the gateway and the services is the proto files under <repo>/proto, built
// by buf into one descriptor set (proto/contract.binpb, `npm run proto`). Each part loads that set
// once at start-up, from the directory its configuration names (VNM_PROTO_DIR, the repository's
// proto/ by default): grpc-js gets package definitions of it, a proto package at a time
// (contract.ts gives the rest).
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import type { FileRegistry } from "@bufbuild/protobuf";
import { loadDescriptors, wireDescriptors } from "./descriptors.ts";
import { etagOf } from "./etag.ts";

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
 * grpc-js's view of the contract: each service's client constructor (its method definitions, for
 * a client or a server). A proto package's services are loaded when one of them is first asked
 * for, with what their methods carry: a part loads only the packages it serves or calls (the
 * bridge service 0.2 MB for its own and the health service, every package 4.2 MB), and in one
 * process (`npm start`) every part shares them. Only each package's wire descriptors are kept
 * for that (87 kB in all), not the registry they come from.
 */
export class GrpcPackage {
  /** Each service's proto package, and each package's wire descriptors until it is loaded. */
  private readonly packageOf = new Map<string, string>();
  private readonly wire = new Map<string, Uint8Array>();
  private readonly loaded = new Map<string, grpc.GrpcObject>();

  constructor(descriptors: FileRegistry) {
    for (const file of descriptors.files) {
      const name = file.proto.package;
      if (file.services.length === 0) continue;
      for (const svc of file.services) this.packageOf.set(svc.typeName, name);
      if (!this.wire.has(name)) this.wire.set(name, wireDescriptors(descriptors, name));
    }
  }

  /** The proto packages loaded so far, in the order they were first asked for. */
  get packages(): string[] {
    return [...this.loaded.keys()];
  }

  /** A service's client constructor by its full name ("vnm.bridge.v1.BridgeService"). */
  service(fullName: string): grpc.ServiceClientConstructor {
    const name = this.packageOf.get(fullName);
    if (name === undefined) throw new Error(`no gRPC service ${fullName} in the proto files`);
    let pkg = this.loaded.get(name);
    if (!pkg) {
      pkg = grpc.loadPackageDefinition(protoLoader.loadFileDescriptorSetFromBuffer(Buffer.from(this.wire.get(name)!), LOADER_OPTIONS));
      this.loaded.set(name, pkg);
      this.wire.delete(name);
    }
    let node: unknown = pkg;
    for (const part of fullName.split(".")) node = (node as Record<string, unknown> | undefined)?.[part];
    const ctor = node as grpc.ServiceClientConstructor | undefined;
    if (!ctor?.service) throw new Error(`no gRPC service ${fullName} in the proto files`);
    return ctor;
  }

  /**
   * The entity tag of `message` answered by `rpc` of a service, as the gateway computes it from
   * that answer: of the message as a gRPC peer decodes it (unset defaults dropped, keys in field
   * order). A write checks If-Match with it.
   */
  answerTag(fullName: string, rpc: string, message: unknown): string {
    const method = this.service(fullName).service[rpc];
    if (!method) throw new Error(`no method ${rpc} of gRPC service ${fullName} in the proto files`);
    return etagOf(method.responseDeserialize(method.responseSerialize(message)));
  }
}

/** The grpc-js view of the descriptor set in `source` (a proto directory, or its descriptors as loadDescriptors gives them). */
export function loadGrpc(source: string | FileRegistry = PROTO_DIR): GrpcPackage {
  return new GrpcPackage(typeof source === "string" ? loadDescriptors(source) : source);
}
