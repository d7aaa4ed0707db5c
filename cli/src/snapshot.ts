// Prints the CLI's catalog (src/catalog.ts) as the kit builds it from the proto files in the
// directory named by its argument; build.mjs runs this and puts the result into the bundle.
import { loadCatalog } from "@vnm/kit";
import { snapshot } from "./catalog.ts";

const protoDir = process.argv[2];
if (!protoDir) throw new Error("usage: snapshot <proto directory>");
process.stdout.write(JSON.stringify(snapshot(loadCatalog(protoDir))));
