// Graceful shutdown: a signal repeated while the closers run (Ctrl-C reaches a process started by
// npm twice: from the terminal and from npm, which passes its own on; or a person presses it
// again) changes nothing: the closers finish and the exit status is 0, not death by the signal.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const fixture = join(import.meta.dirname, "fixtures", "stops-on-signals.mjs");
const shutdown = join(import.meta.dirname, "..", "src", "shutdown.ts");

async function stopWith(signals: NodeJS.Signals[]): Promise<{ code: number | null; signal: string | null; out: string }> {
  const child = spawn(process.execPath, [fixture, shutdown], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  await new Promise<void>((resolve) =>
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.includes("ready")) resolve();
    }),
  );
  for (const s of signals) {
    child.kill(s);
    // The next one comes once the first has been handled, while the closers still run.
    await new Promise((r) => setTimeout(r, 100));
  }
  return { ...(await exited), out };
}

describe("onShutdown", () => {
  it("exits 0 after its closers on SIGINT, SIGINT again meanwhile", async () => {
    expect(await stopWith(["SIGINT", "SIGINT"])).toEqual({ code: 0, signal: null, out: "ready\nclosed\n" });
  });

  it("exits 0 after its closers on SIGTERM, then SIGINT and SIGTERM meanwhile", async () => {
    expect(await stopWith(["SIGTERM", "SIGINT", "SIGTERM"])).toEqual({ code: 0, signal: null, out: "ready\nclosed\n" });
  });
});
