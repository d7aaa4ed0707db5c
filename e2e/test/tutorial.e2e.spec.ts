// docs/tutorial.md, run as a reader runs it: its `sh` and `console` blocks in order, in one bash
// session with the checkout's `vnm` on PATH and curl, against a real stack (every service, a
// gateway, Postgres, NATS, Redis), and each command's output held to what the page shows under
// it (e2e/harness/doc-steps.ts says how). A change to the page, the CLI or the API that makes a
// step untrue fails its test, named by the page's line.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runSteps, type StepRun, shownAs, stepsOf } from "../harness/doc-steps.ts";
import { ROOT, useStack } from "../harness/harness.ts";

const fx = useStack();
const steps = stepsOf(readFileSync(join(ROOT, "docs", "tutorial.md"), "utf8"));
const home = mkdtempSync(join(tmpdir(), "vnm-tutorial-"));
let runs: StepRun[] = [];

beforeAll(async () => {
  // The bin as `npm install` builds it, from the CLI's sources as they are now.
  execFileSync(process.execPath, [join(ROOT, "cli", "build.mjs")], { stdio: "ignore" });
  // What the page's "you only" blocks have a reader do: vnm on PATH, the gateway and the password.
  const env = { PATH: `${join(ROOT, "node_modules", ".bin")}:/usr/bin:/bin`, HOME: home, VNM_URL: fx.gw, VNM_ADMIN_PASSWORD: fx.stack.adminPassword };
  runs = await runSteps(steps, env, home);
}, 300_000);

afterAll(() => rmSync(home, { recursive: true, force: true }));

describe("docs/tutorial.md, step by step", () => {
  it("has its steps: curl and vnm commands, most with the output they print", () => {
    expect(steps.filter((s) => s.kind === "console").length).toBeGreaterThan(30);
    expect(steps.some((s) => s.command.startsWith("curl "))).toBe(true);
    expect(steps.some((s) => s.command.startsWith("vnm "))).toBe(true);
  });

  for (const step of steps) {
    it(`line ${step.line}: ${step.command.split("\n")[0]!.slice(0, 100)}`, () => {
      const run = runs.find((r) => r.step === step);
      expect(run, "not run: an earlier sh step failed").toBeDefined();
      if (step.kind === "sh") expect(run!.status, run!.output).toBe(0);
      else expect(shownAs(step.expected!, run!.output.split("\n"), fx.gw), `the page shows:\n${step.expected!.join("\n")}\nit printed:\n${run!.output}`).toBe(true);
    });
  }
});
