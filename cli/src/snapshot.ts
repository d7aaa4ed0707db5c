// Prints the CLI's catalog (src/catalog.ts) as the kit builds it from the proto files;
// build.mjs runs this and puts the result into the bundle.
import { catalog } from "@vnm/kit";
import { snapshot } from "./catalog.ts";

process.stdout.write(JSON.stringify(snapshot(catalog())));
