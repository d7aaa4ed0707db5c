// The contract's built forms, from the proto files: buf.validate's schema (proto/buf/validate,
// printed from @bufbuild/protovalidate's descriptor), the descriptor set every part reads the
// fields' rules from (proto/contract.binpb, built by buf) and the TypeScript types of its messages
// (services/kit/src/gen/messages.ts, "@vnm/kit/messages", printed from that set). `node
// deploy/proto.ts` writes all three; `--check` fails, naming the file, when one is not what the
// proto files give (npm test runs it); without it, only a file that differs is written (npm start
// runs it, so an edited proto is what the parts load).
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { descriptorsOf } from "@vnm/kit/descriptors";
import { messageTypesSource } from "@vnm/kit/message-types";
import { ROOT } from "@vnm/kit/repo";
import { validateProtoSource } from "@vnm/kit/validate-proto";

const proto = join(ROOT, "proto");
const buf = join(ROOT, "node_modules", ".bin", "buf");
const check = process.argv.includes("--check");

// In order: buf reads the validate schema written before it; the types are the set's just built.
let contract: Buffer | undefined;
const built: [string, () => Buffer][] = [
  ["proto/buf/validate/validate.proto", () => Buffer.from(validateProtoSource())],
  ["proto/contract.binpb", () => (contract = execFileSync(buf, ["build", proto, "-o", "-"], { maxBuffer: 64 << 20 }))],
  ["services/kit/src/gen/messages.ts", () => Buffer.from(messageTypesSource(descriptorsOf(contract!)))],
];

let stale = 0;
for (const [file, make] of built) {
  const path = join(ROOT, file);
  const want = make();
  const fresh = existsSync(path) && want.equals(readFileSync(path));
  if (fresh) continue;
  if (check) {
    console.error(`${file} is not what the proto files give: run npm run proto`);
    stale++;
  } else {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, want);
    console.error(`wrote ${file}`);
  }
}
process.exit(stale > 0 ? 1 : 0);
