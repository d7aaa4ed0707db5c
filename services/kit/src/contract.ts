// The contract as a running part uses it, loaded once by each part when it starts (once for all in
// one process), all from the one descriptor set buf builds from the proto files
// (proto/contract.binpb): the catalog, grpc-js's package, and the fields' rules.
import { buildCatalog, type Catalog } from "./catalog.ts";
import { loadDescriptors } from "./descriptors.ts";
import { type GrpcPackage, loadGrpc, PROTO_DIR } from "./proto.ts";
import { Rules } from "./rules.ts";

export interface Contract {
  catalog: Catalog;
  pkg: GrpcPackage;
  /** The fields' rules (buf.validate), from the descriptor set built from the same files. */
  rules: Rules;
}

/** The contract in `dir`. */
export function loadContract(dir = PROTO_DIR): Contract {
  const descriptors = loadDescriptors(dir);
  return { catalog: buildCatalog(descriptors), pkg: loadGrpc(descriptors), rules: new Rules(descriptors) };
}
