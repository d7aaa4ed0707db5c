// A document's shell steps, run as a reader would run them: every fenced `sh` and `console`
// block in order, in one bash session (a variable set by one step is there for the next), and
// each `console` command's output held to what the document shows under it.
//
// - ```sh: commands; each must succeed (the session stops at the first that fails).
// - ```console: `$ command` lines, each followed by the output it prints (stdout and stderr
//   together). In the shown output, any UUID stands for any UUID, `...` inside a line for any
//   text, and a line that is only `...` for any number of lines; `http://127.0.0.1:8080` is the
//   gateway's address.
// - ```sh you-only (any word after `sh`): what only a reader does (start the system, note the
//   password, follow a stream until Ctrl-C): not run; the caller sets the session's environment.
// Other blocks (yaml, text, json) are shown, never run.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import type { Writable } from "node:stream";

export interface Step {
  /** The 1-based line of the document: an sh step's opening fence, a console step's command. */
  line: number;
  kind: "sh" | "console";
  /** The shell text (a `console` step: one command). */
  command: string;
  /** What a `console` command is shown to print. */
  expected?: string[];
}

/** The steps of a Markdown document, in order. */
export function stepsOf(markdown: string): Step[] {
  const lines = markdown.split("\n");
  const steps: Step[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)\s*(.*)$/.exec(lines[i]!);
    if (!open) continue;
    const [, lang, info] = open;
    const start = i + 1;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i] !== "```"; i++) body.push(lines[i]!);
    if (lang === "sh" && info === "") steps.push({ line: start, kind: "sh", command: body.join("\n") });
    if (lang !== "console") continue;
    for (let j = 0; j < body.length; j++) {
      if (!body[j]!.startsWith("$ ")) throw new Error(`line ${start + 1 + j}: a console block starts each command with "$ "`);
      const expected: string[] = [];
      while (j + 1 < body.length && !body[j + 1]!.startsWith("$ ")) expected.push(body[++j]!);
      steps.push({ line: start + 1 + j - expected.length, kind: "console", command: body[j - expected.length]!.slice(2), expected });
    }
  }
  return steps;
}

const UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";

/** Whether `actual` lines are what `expected` shows (see the top of this file). */
export function shownAs(expected: string[], actual: string[], gateway: string): boolean {
  const line = (e: string) => {
    const parts = e.replaceAll("http://127.0.0.1:8080", gateway).split("...");
    const escaped = parts.map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(new RegExp(UUID, "g"), UUID));
    return new RegExp(`^${escaped.join(".*")}$`);
  };
  const match = (e: number, a: number): boolean => {
    if (e === expected.length) return a === actual.length;
    if (expected[e] === "...") return match(e + 1, a) || (a < actual.length && match(e, a + 1));
    return a < actual.length && line(expected[e]!.trimEnd()).test(actual[a]!.trimEnd()) && match(e + 1, a + 1);
  };
  return match(0, 0);
}

/** The lines without the empty ones at the end, joined. */
const trimEnd = (lines: string[]) => {
  const kept = [...lines];
  while (kept.length > 0 && kept[kept.length - 1] === "") kept.pop();
  return kept.join("\n");
};

export interface StepRun {
  step: Step;
  /** What it printed (a console step: stdout and stderr together), without empty lines at the end. */
  output: string;
  status: number;
}

/**
 * Runs the steps in one bash session with `env`; resolves with each step's run, up to the first
 * `sh` step that failed (included). `pauses` maps a step's index to what is done before it runs,
 * the session waiting meanwhile (its variables kept): a check of the page's prose in a browser
 * between two steps. A pause whose step is never reached is not run; what a pause throws is
 * dropped (the caller keeps its own outcome).
 */
export function runSteps(steps: Step[], env: NodeJS.ProcessEnv, cwd: string, pauses: Map<number, () => Promise<void>> = new Map()): Promise<StepRun[]> {
  const mark = `@@step-${randomBytes(6).toString("hex")}`;
  // A pause: the session says so and reads a line from its fd 3, which the runner writes once done.
  const pause = (n: number) => (pauses.has(n) ? `printf '%s\\n' '${mark} ${n} pause'\nread -r _ <&3\n` : "");
  const script = steps
    .map((s, n) => {
      const body = s.kind === "sh" ? `set -e\n${s.command}\nset +e` : `{\n${s.command}\n} 2>&1`;
      return `${pause(n)}printf '%s\\n' '${mark} ${n} start'\n${body}\nprintf '\\n%s %s\\n' '${mark} ${n} end' "$?"`;
    })
    .join("\n");
  const child = spawn("bash", ["--noprofile", "--norc", "-c", script], { cwd, env, stdio: ["ignore", "pipe", "pipe", "pipe"] });
  const resume = child.stdio[3] as Writable;
  resume.on("error", () => undefined); // the session ended first: nobody is waiting
  let out = "";
  const waiting = new Set(pauses.keys());
  child.stdout!.on("data", (d: Buffer) => {
    out += d.toString();
    for (const n of waiting) {
      if (!out.includes(`${mark} ${n} pause\n`)) continue;
      waiting.delete(n);
      void pauses
        .get(n)!()
        .catch(() => undefined)
        .then(() => resume.write("\n"));
    }
  });
  child.stderr!.on("data", (d: Buffer) => {
    out += d.toString();
  });
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", () => {
      const runs: StepRun[] = [];
      let open: { n: number; lines: string[] } | undefined;
      for (const l of out.split("\n")) {
        const m = l.startsWith(mark) ? /^\S+ (\d+) (start|end|pause)(?: (\d+))?$/.exec(l) : null;
        if (m?.[2] === "pause") continue;
        if (!m) {
          open?.lines.push(l);
          continue;
        }
        if (m[2] === "start") {
          open = { n: Number(m[1]), lines: [] };
          continue;
        }
        if (open) runs.push({ step: steps[open.n]!, output: trimEnd(open.lines), status: Number(m[3]) });
        open = undefined;
      }
      // A step that ended the session (a failing sh step): what it printed, and a failure.
      if (open) runs.push({ step: steps[open.n]!, output: trimEnd(open.lines), status: 1 });
      resolve(runs);
    });
  });
}
