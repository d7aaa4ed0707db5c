// The catalog the CLI is built from. The bundle carries the proto files' reflection as JSON,
// read by build.mjs with the kit's loader when it builds (so the bin needs no proto file at run
// time, and starts without parsing them); run from the sources, the proto files are read.
import { buildCatalog, type Catalog, catalog } from "@vnm/kit";
import protobuf from "protobufjs";

declare const __VNM_PROTO_JSON__: protobuf.INamespace | undefined;

let built: Catalog | undefined;

export function cliCatalog(): Catalog {
  if (typeof __VNM_PROTO_JSON__ === "undefined") return catalog();
  if (!built) {
    const root = protobuf.Root.fromJSON(__VNM_PROTO_JSON__);
    root.resolveAll();
    built = buildCatalog(root);
  }
  return built;
}
