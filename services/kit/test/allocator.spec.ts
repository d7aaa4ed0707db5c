// The system's processes run on jemalloc where the machine has it (allocatorEnv in repo.ts),
// checked in a child started the way the tests and the bench start every part.
import { existsSync } from "node:fs";
import { allocatorEnv, JEMALLOC_CONF } from "@vnm/kit/repo";
import { startProcess } from "@vnm/kit/testing";
import { describe, expect, it } from "vitest";

/** The shared objects a Node child has mapped, and its MALLOC_CONF, as it sees them. */
async function childSees(env: NodeJS.ProcessEnv): Promise<{ jemalloc: boolean; conf: string | null }> {
  const script = `const m = require("node:fs").readFileSync("/proc/self/maps", "utf8"); console.log(JSON.stringify({ jemalloc: /libjemalloc/.test(m), conf: process.env.MALLOC_CONF ?? null }))`;
  const p = startProcess(process.execPath, env, [], ["-e", script]);
  await new Promise((resolve) => p.child.once("exit", resolve));
  return JSON.parse(p.output.join("")) as { jemalloc: boolean; conf: string | null };
}

describe("the allocator", () => {
  const lib = allocatorEnv({})["LD_PRELOAD"];

  it("is jemalloc with the project's configuration in a started process, where the machine has it", async () => {
    if (!lib) {
      // A machine without libjemalloc2 runs glibc's malloc: nothing is preloaded.
      expect(["/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2"].some(existsSync)).toBe(false);
      return;
    }
    const chosen = process.env["LD_PRELOAD"];
    // A preload this test run was started with is kept (LD_PRELOAD= runs everything on glibc).
    if (chosen !== undefined) expect((await childSees({})).jemalloc).toBe(/jemalloc/.test(chosen));
    else expect(await childSees({})).toEqual({ jemalloc: true, conf: process.env["MALLOC_CONF"] ?? JEMALLOC_CONF });
  });

  it("keeps a preload the environment names: an empty one is glibc's malloc", async () => {
    expect(allocatorEnv({ LD_PRELOAD: "" })).toEqual({});
    expect((await childSees({ LD_PRELOAD: "" })).jemalloc).toBe(false);
  });
});
