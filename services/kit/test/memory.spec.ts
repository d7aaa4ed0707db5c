// A process that goes quiet after a busy spell gives the memory back (memory.ts): measured in a
// child process, from /proc (the resident anonymous memory the system sees).
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const fixture = join(import.meta.dirname, "fixtures", "busy-then-quiet.mjs");
const memory = join(import.meta.dirname, "..", "src", "memory.ts");

/** Anonymous RSS (MB) of a child right after its busy spell and once it has been quiet 2.5 s. */
function run(periodSeconds: number): { before: number; after: number } {
  return JSON.parse(execFileSync(process.execPath, [fixture, memory, String(periodSeconds)], { encoding: "utf8" })) as { before: number; after: number };
}

describe("reclaimWhenQuiet", () => {
  it("returns a busy spell's heap pages to the system once the process is quiet", () => {
    const reclaimed = run(0.3);
    const kept = run(0);
    // Without it, V8 keeps the pages of what it no longer holds: nothing comes back.
    expect(kept.before).toBeGreaterThan(100);
    expect(kept.after).toBeGreaterThan(kept.before - 10);
    // With it, most of them come back within a period of quiet.
    expect(reclaimed.before).toBeGreaterThan(100);
    expect(reclaimed.after).toBeLessThan(reclaimed.before / 2);
  });

  it("collects only after a whole period of unbroken quiet, not when a load comes back at a period's end", () => {
    const fixture = join(import.meta.dirname, "fixtures", "flicker-then-quiet.mjs");
    const out = JSON.parse(execFileSync(process.execPath, [fixture, memory], { encoding: "utf8" })) as { duringFlicker: number; afterQuiet: number };
    expect(out.duringFlicker).toBe(0);
    expect(out.afterQuiet).toBe(1);
  });
});

describe("the kit's entry point", () => {
  it("loads node-postgres only when a part uses the database: a gateway imports the kit and never does", () => {
    const index = join(import.meta.dirname, "..", "src", "index.ts");
    const probe = `
      const { createRequire } = await import("node:module");
      await import(${JSON.stringify(index)});
      const loaded = () => Object.keys(createRequire(import.meta.url).cache).some((k) => k.includes("/node_modules/pg/lib/"));
      const before = loaded();
      const { createPool } = await import(${JSON.stringify(join(import.meta.dirname, "..", "src", "db.ts"))});
      const pool = createPool("postgres://127.0.0.1:1/none", "probe");
      await pool.end();
      console.log(JSON.stringify({ before, after: loaded() }));
    `;
    const out = JSON.parse(execFileSync(process.execPath, ["--input-type=module", "-e", probe], { encoding: "utf8" })) as { before: boolean; after: boolean };
    expect(out).toEqual({ before: false, after: true });
  });
});
