// docs/tutorial.md, run as a reader runs it: its `sh` and `console` blocks in order, in one bash
// session with the checkout's `vnm` on PATH and curl, against a real stack (every service, a
// gateway, Postgres, NATS, Redis), and each command's output held to what the page shows under
// it (e2e/harness/doc-steps.ts says how). A change to the page, the CLI or the API that makes a
// step untrue fails its test, named by the page's line. Step 9, "Look at it in the console", is
// prose: the session waits before step 10 while Debian's Chromium (through playwright-core, as
// the console's tests drive it) logs in as alice and checks what the step says is there.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runSteps, type StepRun, shownAs, stepsOf } from "../harness/doc-steps.ts";
import { ROOT, useStack } from "../harness/harness.ts";

const CHROMIUM = "/usr/bin/chromium";
// The console as `npm start` builds it, before the stack's gateway starts (it reads the files then).
beforeAll(() => {
  execFileSync(process.execPath, [join(ROOT, "console", "ensure-built.ts")], { stdio: "ignore" });
}, 300_000);
const fx = useStack();
const page = readFileSync(join(ROOT, "docs", "tutorial.md"), "utf8");
const steps = stepsOf(page);
const home = mkdtempSync(join(tmpdir(), "vnm-tutorial-"));
let runs: StepRun[] = [];

/** Step 9 of the page: its heading's line, and the first step run after it (step 10's first). */
const step9 = page.split("\n").findIndex((l) => l.startsWith("## 9. ")) + 1;
const afterStep9 = steps.findIndex((s) => s.line > step9);
/** What the console check found: undefined until it ran, then its error or "ok". */
let looked: { error?: unknown } | undefined;

/**
 * Waits until `fn`'s value is `want` (deep equality, or the pattern for a string), for 10 s at
 * most (expect.poll runs only inside a test, and this runs between two steps of the session).
 */
async function until<T>(what: string, fn: () => Promise<T>, want: T | RegExp): Promise<void> {
  const end = Date.now() + 10_000;
  let last: unknown;
  for (;;) {
    try {
      last = await fn();
      if (want instanceof RegExp ? typeof last === "string" && want.test(last) : JSON.stringify(last) === JSON.stringify(want)) return;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end) throw new Error(`${what}: wanted ${String(want instanceof RegExp ? want : JSON.stringify(want))}, got ${last instanceof Error ? last.message : JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Step 9 as a reader does it, between steps 8 and 10: alice in the console, looking at what the page says is there. */
async function lookInTheConsole(): Promise<void> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (.ci/run does)`);
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"] });
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    context.setDefaultTimeout(10_000);
    const p = await context.newPage();
    const rows = (p: Page) => p.locator("main tbody tr");
    // "Open http://127.0.0.1:8080/ and log in as alice."
    await p.goto(`${fx.gw}/`);
    await p.getByLabel("User name").fill("alice");
    await p.getByLabel("Password").fill("plum-harbor-quietly-47");
    await p.getByRole("button", { name: "Log in" }).click();
    // "Bridges lists web and db."
    await p.getByRole("button", { name: "Log out", exact: true }).waitFor();
    await p.getByRole("navigation", { name: "Kinds" }).getByRole("link", { name: "Bridges", exact: true }).click();
    await until("the bridges", async () => (await p.locator('main tbody td[data-label="Name"]').allTextContents()).sort(), ["db", "web"]);
    // "web's page shows its fields (its inbound filter as a link named web-in), its DHCP subnet
    // 10.0.1.0_24 and its ports, with New DHCP subnet and New port to add more."
    await p.getByRole("link", { name: "web", exact: true }).click();
    await p.locator("h1 .item-name", { hasText: "web" }).waitFor();
    await until("web's inbound filter", () => p.locator('.fields dd a[data-ref="policy.Chain"]').textContent(), /^web-in \(/);
    await p.getByRole("link", { name: "10.0.1.0_24" }).waitFor();
    await until("web's ports", () => p.getByRole("region", { name: "Ports", exact: true }).locator("tbody tr").count(), 3);
    await p.getByRole("link", { name: "New DHCP subnet" }).waitFor();
    await p.getByRole("link", { name: "New port" }).waitFor();
    // "Topology draws edge above web, their ports joined by the link."
    await p.getByRole("navigation", { name: "Kinds" }).getByRole("link", { name: "Topology" }).click();
    const box = (kind: string, name: string) => p.locator(`[data-kind="${kind}"]`, { hasText: name });
    await box("Router", "edge").waitFor();
    expect((await box("Router", "edge").boundingBox())!.y).toBeLessThan((await box("Bridge", "web").boundingBox())!.y);
    await until("the links drawn", () => p.locator("[data-link]").count(), 1);
    // "Chains → web-in lists the three rules in order."
    await p.getByRole("navigation", { name: "Kinds" }).getByRole("link", { name: "Chains", exact: true }).click();
    await p.getByRole("link", { name: "web-in", exact: true }).click();
    const rules = p.getByRole("region", { name: "Rules" }).locator("tbody tr");
    await until("web-in's rules", () => rules.count(), 3);
    expect(await rules.allTextContents()).toEqual([expect.stringMatching(/TCP to port 80.*Accept/), expect.stringMatching(/TCP to port 443.*Accept/), expect.stringMatching(/any traffic.*Drop/)]);
    // "Leave a list open and run any command above again: the change appears within a moment,
    // without a reload." (the bridge's state, as step 7 changed it, and back)
    await p.getByRole("navigation", { name: "Kinds" }).getByRole("link", { name: "Bridges", exact: true }).click();
    const web = rows(p).filter({ hasText: "web" }).locator('td[data-label="Admin state up"]');
    await until("web's state", () => web.textContent(), "yes");
    execFileSync(join(ROOT, "node_modules", ".bin", "vnm"), ["bridge", "update", "web", "--admin-state-up", "false"], { env: { ...process.env, HOME: home, VNM_URL: fx.gw }, stdio: "ignore" });
    await until("web's state, changed by vnm", () => web.textContent(), "no");
    execFileSync(join(ROOT, "node_modules", ".bin", "vnm"), ["bridge", "update", "web", "--admin-state-up", "true"], { env: { ...process.env, HOME: home, VNM_URL: fx.gw }, stdio: "ignore" });
    await until("web's state, changed back", () => web.textContent(), "yes");
  } finally {
    await browser.close();
  }
}

beforeAll(async () => {
  // The bin as `npm install` builds it, from the CLI's sources as they are now.
  execFileSync(process.execPath, [join(ROOT, "cli", "build.mjs")], { stdio: "ignore" });
  // What the page's "you only" blocks have a reader do: vnm on PATH, the gateway and the password.
  const env = { PATH: `${join(ROOT, "node_modules", ".bin")}:/usr/bin:/bin`, HOME: home, VNM_URL: fx.gw, VNM_ADMIN_PASSWORD: fx.stack.adminPassword };
  const look = async () => {
    try {
      await lookInTheConsole();
      looked = {};
    } catch (error) {
      looked = { error };
    }
  };
  runs = await runSteps(steps, env, home, new Map([[afterStep9, look]]));
}, 300_000);

afterAll(() => rmSync(home, { recursive: true, force: true }));

describe("docs/tutorial.md, step by step", () => {
  it("has its steps: curl and vnm commands, most with the output they print, and step 9 in the console", () => {
    expect(steps.filter((s) => s.kind === "console").length).toBeGreaterThan(30);
    expect(steps.some((s) => s.command.startsWith("curl "))).toBe(true);
    expect(steps.some((s) => s.command.startsWith("vnm "))).toBe(true);
    expect(step9).toBeGreaterThan(0);
    expect(steps[afterStep9]?.command).toBe("vnm delete -f db.yaml");
  });

  steps.forEach((step, n) => {
    if (n === afterStep9)
      it(`line ${step9}: step 9, what the console shows (alice in Chromium: bridges, web's page, topology, web-in's rules, a change appearing live)`, () => {
        expect(looked, "not run: an earlier sh step failed").toBeDefined();
        if (looked!.error) throw looked!.error;
      });
    it(`line ${step.line}: ${step.command.split("\n")[0]!.slice(0, 100)}`, () => {
      const run = runs.find((r) => r.step === step);
      expect(run, "not run: an earlier sh step failed").toBeDefined();
      if (step.kind === "sh") expect(run!.status, run!.output).toBe(0);
      else expect(shownAs(step.expected!, run!.output.split("\n"), fx.gw), `the page shows:\n${step.expected!.join("\n")}\nit printed:\n${run!.output}`).toBe(true);
    });
  });
});
