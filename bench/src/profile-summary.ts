// Top functions of a V8 .cpuprofile (node --cpu-prof), as markdown: self time by function and
// by package. Usage: node bench/src/profile-summary.ts <file.cpuprofile> [top=25]
import { readFileSync } from "node:fs";

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

const [file, topArg] = process.argv.slice(2);
if (!file) throw new Error("usage: profile-summary.ts <file.cpuprofile> [top]");
const top = Number(topArg ?? 25);
const prof = JSON.parse(readFileSync(file, "utf8")) as Profile;
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const selfUs = new Map<number, number>();
for (let i = 0; i < prof.samples.length; i++) {
  const id = prof.samples[i]!;
  selfUs.set(id, (selfUs.get(id) ?? 0) + (prof.timeDeltas[i] ?? 0));
}
const total = [...selfUs.values()].reduce((a, b) => a + b, 0);

/** Where a frame comes from: a package, node internals, our code, or V8 itself. */
function origin(url: string): string {
  if (!url) return "(v8/native)";
  if (url.startsWith("node:")) return "node:internal";
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1]!;
  const ours = /\/(gateway|services\/[^/]+)\/src\//.exec(url);
  return ours ? ours[1]! : url.replace(/^file:\/\//, "");
}

const fn = new Map<string, number>();
const pkg = new Map<string, number>();
for (const [id, us] of selfUs) {
  const n = byId.get(id)!;
  const { functionName, url, lineNumber } = n.callFrame;
  const short = url.replace(/^.*node_modules\//, "").replace(/^file:\/\/.*?\/(gateway|services)\//, "$1/");
  const key = `${functionName || "(anonymous)"} ${short ? `${short}:${lineNumber + 1}` : ""}`.trim();
  fn.set(key, (fn.get(key) ?? 0) + us);
  const o = origin(url);
  pkg.set(o, (pkg.get(o) ?? 0) + us);
}

const pct = (us: number) => `${((100 * us) / total).toFixed(1)}%`;
const rows = (m: Map<string, number>, n: number) =>
  [...m]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, us]) => `| ${pct(us)} | ${(us / 1000).toFixed(0)} | \`${k.replace(/\|/g, "\\|")}\` |`)
    .join("\n");
console.log(`Profile ${file.replace(/^.*\//, "")}: ${(total / 1e6).toFixed(1)} s sampled\n`);
console.log(`By origin (self time):\n\n| share | ms | origin |\n|---|---|---|\n${rows(pkg, 12)}\n`);
console.log(`Top ${top} functions (self time):\n\n| share | ms | function |\n|---|---|---|\n${rows(fn, top)}\n`);
