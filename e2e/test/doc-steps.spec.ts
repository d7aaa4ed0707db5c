// How docs/tutorial.md's test reads and runs a page (e2e/harness/doc-steps.ts): which blocks run,
// how a shown output is matched, and that a step the page gets wrong fails. No stack needed.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runSteps, shownAs, stepsOf } from "../harness/doc-steps.ts";

const dir = mkdtempSync(join(tmpdir(), "vnm-doc-steps-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const page = [
  "# A page",
  "```sh you-only",
  "npm start",
  "```",
  "```sh",
  "N=41",
  "```",
  "```console",
  "$ echo $((N + 1))",
  "42",
  "$ printf 'a\\nb\\nc\\n'",
  "a",
  "...",
  "```",
  "```yaml",
  "kind: bridge",
  "```",
].join("\n");

describe("a page's steps", () => {
  it("are its sh blocks and each console command with the output shown under it; sh blocks with a word after sh, and other languages, are not run", () => {
    expect(stepsOf(page)).toEqual([
      { line: 5, kind: "sh", command: "N=41" },
      { line: 9, kind: "console", command: "echo $((N + 1))", expected: ["42"] },
      { line: 11, kind: "console", command: "printf 'a\\nb\\nc\\n'", expected: ["a", "..."] },
    ]);
  });

  it("match what they print: any UUID for a UUID, ... for any text or lines, the gateway for http://127.0.0.1:8080; anything else fails", () => {
    const gw = "http://127.0.0.1:4321";
    expect(shownAs(["bridge/2cb89d24-763c-45fc-b0a9-0712bd223504 created"], ["bridge/0db9f690-657a-4887-a709-b072d37d6d4e created"], gw)).toBe(true);
    expect(shownAs(["201 http://127.0.0.1:8080/users/..."], [`201 ${gw}/users/x`], gw)).toBe(true);
    expect(shownAs(["a", "...", "z"], ["a", "b", "c", "z"], gw)).toBe(true);
    expect(shownAs(["x   "], ["x"], gw)).toBe(true); // trailing blanks of a table's last column
    expect(shownAs(["dhcp-subnet/10.0.1.0_24"], ["dhcp-subnet/10.0.2.0_24"], gw)).toBe(false);
    expect(shownAs(["one"], ["one", "two"], gw)).toBe(false);
    expect(shownAs(["bridge/not-a-uuid"], ["bridge/2cb89d24-763c-45fc-b0a9-0712bd223504"], gw)).toBe(false);
  });

  it("run in one shell session (a variable set by one is there for the next), and stop at an sh step that fails", async () => {
    const runs = await runSteps(stepsOf(page), { PATH: "/usr/bin:/bin" }, dir);
    expect(runs.map((r) => [r.output, r.status])).toEqual([
      ["", 0],
      ["42", 0],
      ["a\nb\nc", 0],
    ]);
    const failing = await runSteps(stepsOf("```sh\nfalse\n```\n```console\n$ echo never\nnever\n```"), { PATH: "/usr/bin:/bin" }, dir);
    expect(failing.map((r) => r.status)).toEqual([1]);
  });

  it("pause before a step while the caller does something (a browser's check), the session and its variables waiting; a pause not reached is not run", async () => {
    const steps = stepsOf("```sh\nN=41\ntouch before-pause\n```\n```console\n$ echo $((N + 1)) $(ls *-pause)\n42 after-pause before-pause\n```");
    let before: boolean | undefined;
    const runs = await runSteps(
      steps,
      { PATH: "/usr/bin:/bin" },
      dir,
      new Map([
        [
          1,
          async () => {
            before = existsSync(join(dir, "before-pause"));
            await new Promise((r) => setTimeout(r, 300));
            writeFileSync(join(dir, "after-pause"), "");
          },
        ],
      ]),
    );
    expect(before).toBe(true);
    expect(runs.map((r) => [r.output, r.status])).toEqual([
      ["", 0],
      ["42 after-pause before-pause", 0],
    ]);
    let ran = false;
    const stopped = await runSteps(stepsOf("```sh\nfalse\n```\n```sh\ntrue\n```"), { PATH: "/usr/bin:/bin" }, dir, new Map([
        [
          1,
          async () => {
            ran = true;
          },
        ],
      ]));
    expect(stopped.map((r) => r.status)).toEqual([1]);
    expect(ran).toBe(false);
  });
});
