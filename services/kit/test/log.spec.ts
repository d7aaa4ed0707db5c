// Logs for a machine or for a person: JSON lines when stdout is not a terminal, pino-pretty's
// lines on a terminal (a real one: util-linux's `script` gives the child a pseudo-terminal), and
// lines written for a person (writeOut) after every log line written before them.
import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const log = join(import.meta.dirname, "..", "src", "log.ts");
const program = `
const { createLogger, writeOut } = await import(${JSON.stringify(log)});
const a = createLogger({ service: "bridge" });
const b = createLogger({ service: "gateway" });
for (let i = 0; i < 500; i++) (i % 2 ? a : b).info("service ready", { port: 4000 + i });
writeOut("SUMMARY\\n");
`;

const ANSI_COLOUR = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g");

/** The program's output, with stdout a pipe, or a terminal when `tty`. */
function run(tty: boolean, env: NodeJS.ProcessEnv = {}): string {
  const node = [process.execPath, "--input-type=module", "-e", program];
  const options = { encoding: "utf8" as const, env: { ...process.env, ...env } };
  if (!tty) return execFileSync(node[0]!, node.slice(1), options);
  const command = node.map((a) => `'${a.replace(/'/g, "'\\''")}'`).join(" ");
  return execFileSync("script", ["-qec", command, "/dev/null"], options).replace(/\r/g, "");
}

describe("logs", () => {
  it("are JSON lines when stdout is not a terminal, and what is written for a person comes after them", () => {
    const lines = run(false).trim().split("\n");
    expect(lines).toHaveLength(501);
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: "info", service: "gateway", port: 4000, msg: "service ready" });
    expect(lines[500]).toBe("SUMMARY");
  });

  it("are pretty on a terminal: time, level, part and message, the rest on the same line", () => {
    const out = run(true);
    const first = out.split("\n").find((l) => l.includes("service ready"))!;
    expect(first).not.toContain('{"level"');
    // Colours on a terminal; without them the line reads "[12:00:00] INFO: gateway: service ready {"port":4000}".
    expect(first.replace(ANSI_COLOUR, "")).toMatch(/^\[\d\d:\d\d:\d\d\] INFO: gateway: service ready \{"port":4000\}$/);
    expect(out.trim().split("\n").at(-1)).toBe("SUMMARY");
  });

  it("a burst's last lines leave within a fraction of a second too, even when a write was held up as the burst ended", async () => {
    // The reader holds stdout back (a full pipe: the write on its way waits) while a burst and
    // then a last line are logged, then reads. Whatever the burst's size, what waits behind that
    // write must leave once it is done, not at the next line or at the exit.
    const tails = [0, 1500, 3000, 4500, 6000, 7500, 9000, 10500, 12000, 13500, 15000];
    await Promise.all(
      tails.map(async (tail) => {
        const child = spawn(process.execPath, ["--input-type=module", "-e", `
          const { createLogger } = await import(${JSON.stringify(log)});
          const l = createLogger({ service: "bridge" });
          for (let i = 0; i < 1000; i++) l.info("burst", { pad: "x".repeat(1000) });
          l.info("burst", { pad: "y".repeat(${tail}) });
          setTimeout(() => l.info("last"), 200);
          setTimeout(() => process.stderr.write("done"), 500);
          setTimeout(() => {}, 10_000);
        `]);
        try {
          child.stdout.pause();
          await once(child.stderr, "data");
          let text = "";
          child.stdout.on("data", (c: Buffer) => {
            text += c.toString();
          });
          child.stdout.resume();
          const started = performance.now();
          while (!text.includes('"msg":"last"') && performance.now() - started < 3_000) await new Promise((r) => setTimeout(r, 20));
          expect(text.trim().split("\n"), `tail of ${tail} B`).toHaveLength(1002);
        } finally {
          child.kill();
        }
      }),
    );
  });

  it("leave a quiet process within a fraction of a second, not only at its exit", async () => {
    const child = spawn(process.execPath, ["--input-type=module", "-e", `
      const { createLogger } = await import(${JSON.stringify(log)});
      createLogger({ service: "bridge" }).info("alone");
      setTimeout(() => {}, 5_000);
    `]);
    try {
      const started = performance.now();
      const [chunk] = (await once(child.stdout, "data")) as [Buffer];
      expect(JSON.parse(chunk.toString())).toMatchObject({ msg: "alone" });
      // Batched lines wait 100 ms at most; the process lives 5 s.
      expect(performance.now() - started).toBeLessThan(4_000);
    } finally {
      child.kill();
    }
  });

  it("stay JSON on a terminal with LOG_FORMAT=json", () => {
    const first = run(true, { LOG_FORMAT: "json" }).split("\n")[0]!;
    expect(JSON.parse(first)).toMatchObject({ level: "info", msg: "service ready" });
  });
});
