// Preloaded into a gateway or service (node --import ./bench/src/memory-probe.ts ...) to say
// what its memory is made of: on SIGUSR2 it writes one JSON line to stderr with
// process.memoryUsage(), V8's heap spaces, and the modules loaded, counted by package.
import { registerHooks } from "node:module";
import { getHeapSpaceStatistics } from "node:v8";

const loaded = new Map<string, number>();

function origin(url: string): string {
  if (url.startsWith("node:")) return "node:*";
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1]!;
  const ours = /\/(gateway|services\/[^/]+)\//.exec(url);
  return ours ? ours[1]! : "other";
}

registerHooks({
  load(url, context, next) {
    const o = origin(url);
    loaded.set(o, (loaded.get(o) ?? 0) + 1);
    return next(url, context);
  },
});

const mb = (n: number) => Math.round(n / 1024 / 102.4) / 10;

process.on("SIGUSR2", () => {
  const m = process.memoryUsage();
  const spaces = Object.fromEntries(getHeapSpaceStatistics().map((s) => [s.space_name, mb(s.space_used_size)]));
  const modules = [...loaded].sort((a, b) => b[1] - a[1]);
  const total = modules.reduce((a, [, n]) => a + n, 0);
  process.stderr.write(
    `MEMPROBE ${JSON.stringify({ rssMb: mb(m.rss), heapTotalMb: mb(m.heapTotal), heapUsedMb: mb(m.heapUsed), externalMb: mb(m.external), arrayBuffersMb: mb(m.arrayBuffers), spacesMb: spaces, modules: total, byPackage: Object.fromEntries(modules.slice(0, 25)) })}\n`,
  );
});
