// Prints the proto files' reflection (protobufjs JSON) as the kit loads it; build.mjs runs this
// and puts the result into the bundle.
import { loadReflection } from "@vnm/kit";

process.stdout.write(JSON.stringify(loadReflection().toJSON()));
