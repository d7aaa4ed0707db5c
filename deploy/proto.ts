// The contract's built forms, from the proto files: buf.validate's schema (proto/buf/validate,
// printed from @bufbuild/protovalidate's descriptor) and the descriptor set every part reads the
// fields' rules from (proto/contract.binpb, built by buf). `node deploy/proto.ts` writes both;
// `--check` fails, naming the file, when either is not what the proto files give (npm test runs
// it); without it, only a file that differs is written (npm start runs it, so an edited proto is
// what the parts load).
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { validateProtoSource } from "@vnm/kit/validate-proto";
import { ROOT } from "@vnm/kit/repo";

const proto = join(ROOT, "proto");
const buf = join(ROOT, "node_modules", ".bin", "buf");
const check = process.argv.includes("--check");

const built: [string, () => Buffer][] = [
  ["buf/validate/validate.proto", () => Buffer.from(validateProtoSource())],
  ["contract.binpb", () => execFileSync(buf, ["build", proto, "-o", "-"], { maxBuffer: 64 << 20 })],
];

let stale = 0;
for (const [file, make] of built) {
  const path = join(proto, file);
  const want = make();
  const fresh = existsSync(path) && want.equals(readFileSync(path));
  if (fresh) continue;
  if (check) {
    console.error(`proto/${file} is not what the proto files give: run npm run proto`);
    stale++;
  } else {
    writeFileSync(path, want);
    console.error(`wrote proto/${file}`);
  }
}
process.exit(stale > 0 ? 1 : 0);
