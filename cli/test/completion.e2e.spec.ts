// Completion as an operator meets it: the script `vnm completion <shell>` prints, loaded in a
// real interactive bash, zsh and fish on a pseudo-terminal (script(1)), TAB pressed after
// `vnm bridge get`, with the installed bin on the PATH against a real stack whose bridges a
// tenant named to do harm. A name is offered and, accepted, reaches vnm as exactly that name;
// nothing in it runs (the commands in the names would create files in the shell's directory).
// Names no gateway of ours would keep (line breaks, control characters) come from a stub that
// lists bridges as the gateway does.
import { type ChildProcess, execFile as execFileCb, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify, stripVTControlCharacters } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, Stack, waitFor } from "@vnm/e2e/harness";

const fx = { stack: new Stack(), gw: "" };
const home = mkdtempSync(join(tmpdir(), "vnm-completion-"));
/** The shells' directory: a command run from a name would leave its file here. */
const work = join(home, "work");
mkdirSync(work);
// A file that the glob in a name would match, were the name left unquoted on the line.
writeFileSync(join(work, "p4_abx"), "");
const execFile = promisify(execFileCb);
const BIN = join(ROOT, "node_modules", ".bin", "vnm");
const NODE = existsSync("/usr/bin/node") ? "/usr/bin/node" : process.execPath;
const PATH = `${dirname(BIN)}:${dirname(NODE)}:/usr/bin:/bin`;
const env = (url = fx.gw): NodeJS.ProcessEnv => ({ PATH, HOME: home, XDG_CONFIG_HOME: join(home, "config"), VNM_URL: url, LANG: "C.UTF-8", TERM: "xterm" });

beforeAll(async () => {
  await fx.stack.startServices("bridge", "identity");
  fx.gw = await fx.stack.startGateway({}, false);
  execFileSync(BIN, ["login", "--user", "admin"], { env: { ...env(), VNM_PASSWORD: fx.stack.adminPassword }, stdio: "ignore" });
});
afterAll(async () => {
  await fx.stack.stop();
  rmSync(home, { recursive: true, force: true });
});

/** What was run from a name: every file in the shells' directory but the glob's bait. */
const ran = () => readdirSync(work).filter((f) => f !== "p4_abx");

/** The shell's `${IFS}` (a blank that survives the old script's word splitting), as written in a name. */
const IFS = ["$", "{IFS}"].join("");
/** A tenant's bridges, named to do harm when a shell reads them as code; each has its own first two characters. */
const HOSTILE = [
  `m1$(touch${IFS}pwned-m1)`,
  `n2\`touch${IFS}pwned-n2\``,
  `o3 it's "quoted" $HOME`,
  "p4*[ab]?{x,y}",
  "q5\\back\\\\slash\\",
  `r6;touch${IFS}pwned-r6&>pwned-r6b|x`,
  "~g7$((1))",
  "s8 $(touch pwned-s8) ;",
  "t9!!x",
];
/** Names a command would take for options: never offered. */
const DASHED = [`-rf$(touch${IFS}pwned-dash)`, "--url=http://127.0.0.1:9"];
const ids = new Map<string, string>();

beforeAll(async () => {
  for (const name of [...HOSTILE, ...DASHED]) {
    const out = execFileSync(BIN, ["bridge", "create", "--tenant-id", "mallory", "--data", JSON.stringify({ name }), "-o", "name"], { env: env() }).toString();
    ids.set(name, out.trim().split("/")[1]!);
  }
});

// --- an interactive shell on a pseudo-terminal --------------------------------------------

const quote = (w: string) => `'${w.replaceAll("'", `'\\''`)}'`;

class Terminal {
  out = "";
  private readonly child: ChildProcess;

  constructor(argv: string[], extra: NodeJS.ProcessEnv = {}) {
    // A wide terminal, so no line wraps; script(1) gives the shell a pseudo-terminal of its own.
    const cmd = `stty cols 250 rows 50; exec ${argv.map(quote).join(" ")}`;
    this.child = spawn("script", ["-qfec", cmd, "/dev/null"], { cwd: work, env: { ...env(), ...extra } });
    this.child.stdout!.on("data", (d: Buffer) => {
      this.out += d.toString();
    });
  }

  /** The output since `from`, as a screen shows its text. */
  text(from = 0): string {
    return stripVTControlCharacters(this.out.slice(from)).replaceAll("\r", "");
  }

  /** Waits until nothing more has come for `ms`. */
  async quiet(ms = 300): Promise<void> {
    let seen = -1;
    while (seen !== this.out.length) {
      seen = this.out.length;
      await new Promise((r) => setTimeout(r, ms));
    }
  }

  async ready(): Promise<void> {
    await waitFor("the prompt", async () => this.text().includes("READY> "), 20_000);
    await this.quiet();
  }

  /** Types the keys, and waits for the shell to be done with them. */
  async type(keys: string): Promise<void> {
    this.child.stdin!.write(keys);
    await this.quiet();
  }

  /**
   * Types each part and presses TAB after it, waiting for what TAB puts on the line; then types
   * `rest` and Enter, and gives the output of the command up to its exit status (the `echo`
   * that `rest` ends with).
   */
  async tab(parts: string[], rest: string): Promise<string> {
    for (const part of parts) {
      await this.type(part);
      const before = this.out.length;
      this.child.stdin!.write("\t");
      await waitFor("TAB's answer", async () => this.out.length > before, 10_000).catch(() => {});
      await this.quiet();
    }
    const from = this.out.length;
    this.child.stdin!.write(`${rest}\r`);
    await waitFor("the command's end", async () => /status=\d+/.test(this.text(from)), 10_000).catch(() => {});
    await this.quiet(100);
    return this.text(from);
  }

  close(): Promise<void> {
    const done = new Promise<void>((r) => this.child.on("close", () => r()));
    this.child.kill();
    return done;
  }
}

interface ShellSetup {
  argv: string[];
  env?: NodeJS.ProcessEnv;
  /** After the completed word: the command's exit status, shown as `status=N`. */
  status: string;
}

/** Each shell with the completion script loaded the way the script says, and the prompt READY>. */
function setup(shell: "bash" | "zsh" | "fish"): ShellSetup {
  const dir = mkdtempSync(join(home, `${shell}-`));
  const script = execFileSync(BIN, ["completion", shell], { env: env() }).toString();
  if (shell === "bash") {
    writeFileSync(join(dir, "rc"), `eval "$(vnm completion bash)"\nPS1='READY> '\nPS2='MORE> '\n`);
    return { argv: ["bash", "--noprofile", "--rcfile", join(dir, "rc"), "-i"], status: ' ; echo "status=$?"' };
  }
  if (shell === "zsh") {
    // No global rc files; the script loads compinit itself when the user's setup has not.
    writeFileSync(join(dir, ".zshrc"), `eval "$(vnm completion zsh)"\nPS1='READY> '\nPS2='MORE> '\n`);
    return { argv: ["zsh", "-d", "-i"], env: { ZDOTDIR: dir }, status: ' ; echo "status=$?"' };
  }
  writeFileSync(join(dir, "vnm.fish"), script);
  const init = `set -g fish_greeting; set -g fish_autosuggestion_enabled 0; function fish_prompt; printf 'READY> '; end; vnm completion fish | source`;
  return { argv: ["fish", "--no-config", "-i", "-C", init], status: " ; echo status=$status" };
}

/** The typed beginnings of a name (as the shell reads them) and the quote they are open in. */
const typings: [string, string][] = [
  ["m1", HOSTILE[0]!],
  ['"m1', HOSTILE[0]!],
  ["'m1", HOSTILE[0]!],
  ["n2", HOSTILE[1]!],
  ['"n2', HOSTILE[1]!],
  ["o3", HOSTILE[2]!],
  ["'o3", HOSTILE[2]!],
  ['"o3', HOSTILE[2]!],
  ["p4", HOSTILE[3]!],
  ["q5", HOSTILE[4]!],
  ['"q5', HOSTILE[4]!],
  ["r6", HOSTILE[5]!],
  ["\\~g", HOSTILE[6]!],
  ["s8", HOSTILE[7]!],
  ["t9", HOSTILE[8]!],
];

describe.each(["bash", "zsh", "fish"] as const)("%s", (shell) => {
  let term: Terminal;
  let cfg: ShellSetup;
  beforeAll(async () => {
    cfg = setup(shell);
    term = new Terminal(cfg.argv, cfg.env);
    await term.ready();
  });
  afterAll(() => term?.close());

  it("completes a tenant's hostile names as words that reach vnm exactly, and runs nothing in them", { timeout: 240_000 }, async () => {
    const missed: string[] = [];
    for (const [typed, name] of typings) {
      const shown = await term.tab([`vnm bridge get -o name ${typed}`], cfg.status);
      // Accepted, the completed word is the bridge's name: vnm found that very bridge.
      if (!shown.includes(`bridge/${ids.get(name)}\n`) || !/status=0/.test(shown)) missed.push(`${typed} -> ${JSON.stringify(shown)}`);
    }
    expect(missed).toEqual([]);
    expect(ran()).toEqual([]);
  });

  it("lists every name on a second TAB, runs none of them, and offers no name that starts with a dash", { timeout: 60_000 }, async () => {
    const from = term.out.length;
    await term.type("vnm bridge delete ");
    await term.type("\t");
    await term.type("\t");
    await waitFor("the list", async () => /t9/.test(term.text(from)), 10_000).catch(() => {});
    await term.quiet();
    const listing = term.text(from);
    await term.type("\u0003");
    expect(ran()).toEqual([]);
    // Each name is shown (as the shell shows a word: quoted by bash and zsh, as it is by fish).
    expect(listing).toMatch(/m1/);
    expect(listing).toMatch(/t9/);
    expect(listing).not.toMatch(/-rf|--url/);
  });

  it("still completes kinds, verbs and flags", { timeout: 60_000 }, async () => {
    // Each word but the value and the name, completed from its first letters.
    const line = await term.tab(["vnm bri", "cr", " --ten", "acme --na"], `verb-ok -o name${cfg.status}`);
    const id = /bridge\/([0-9a-f-]{36})\n/.exec(line)?.[1];
    expect(line).toMatch(/status=0/);
    const made = JSON.parse(execFileSync(BIN, ["bridge", "get", id ?? "none", "-o", "json"], { env: env() }).toString());
    expect(made).toMatchObject({ name: "verb-ok", tenantId: "acme" });
    execFileSync(BIN, ["bridge", "delete", id!], { env: env() });
  });
});

// --- the words each shell is given, listed without a terminal -----------------------------

/**
 * The names and ids bash's completion offers for the words of a line (the last one being
 * completed), each read back as bash reads a word.
 */
async function bashWords(words: string[], url = fx.gw): Promise<string[]> {
  const file = join(home, "listing.bash");
  writeFileSync(file, (await execFile(BIN, ["completion", "bash"], { env: env(url) })).stdout);
  const line = words.join(" ");
  const program = [
    `source ${quote(file)}`,
    `COMP_LINE=${quote(line)}; COMP_POINT=${line.length}`,
    `COMP_WORDS=(${words.map(quote).join(" ")}); COMP_CWORD=${words.length - 1}`,
    `_vnm vnm ${quote(words.at(-1)!)} ${quote(words.at(-2)!)}`,
    // What the line would hold, read as the shell reads a word.
    `for w in "\${COMPREPLY[@]}"; do eval "printf '%s\\\\0' $w"; done`,
  ].join("\n");
  const { stdout } = await execFile("bash", ["--norc", "--noprofile", "-c", program], { cwd: work, env: env(url) });
  return stdout.split("\0").slice(0, -1);
}

/** The candidates fish's completion offers for a line. */
async function fishWords(line: string, url = fx.gw): Promise<string[]> {
  const program = `vnm completion fish | source; complete -C ${quote(line)}`;
  const { stdout } = await execFile("fish", ["--no-config", "-c", program], { cwd: work, env: env(url) });
  return stdout
    .split("\n")
    .filter(Boolean)
    .map((l) => l.split("\t")[0]!);
}

describe("the words offered", () => {
  it("are every name and id of the kind, literally, but those starting with a dash (bash, fish)", async () => {
    const expected = [...HOSTILE, ...[...ids.values()]].sort();
    const offered = (words: string[]) => words.filter((w) => HOSTILE.includes(w) || DASHED.includes(w) || [...ids.values()].includes(w));
    const bash = await bashWords(["vnm", "bridge", "get", "--tenant", "mallory", ""]);
    expect(offered(bash).sort()).toEqual(expected);
    expect(bash.length).toBe(expected.length);
    const fish = await fishWords("vnm bridge get --tenant mallory ");
    expect(offered(fish).sort()).toEqual(expected);
    expect(fish.length).toBe(expected.length);
    // Typed as far as a quote, a glob or a backslash, the same name still matches.
    expect(await bashWords(["vnm", "bridge", "get", "o3\\ it\\'s"])).toEqual([HOSTILE[2]]);
    expect(await bashWords(["vnm", "bridge", "get", "p4\\*\\["])).toEqual([HOSTILE[3]]);
    expect(await bashWords(["vnm", "bridge", "get", "q5\\\\back"])).toEqual([HOSTILE[4]]);
    expect(await fishWords("vnm bridge get 'o3 it")).toEqual([HOSTILE[2]]);
    expect(ran()).toEqual([]);
  });

  describe("from a gateway that lists names no line can hold", () => {
    let stub: Server;
    let url = "";
    const items = [
      { id: "8a0f2b7e-1c1d-4c55-9d0e-000000000001", tenantId: "mallory", name: "ok-name", adminStateUp: true },
      { id: "8a0f2b7e-1c1d-4c55-9d0e-000000000002", tenantId: "mallory", name: `nl\n$(touch${IFS}pwned-nl)`, adminStateUp: true },
      { id: "8a0f2b7e-1c1d-4c55-9d0e-000000000003", tenantId: "mallory", name: `cr\r\`touch${IFS}pwned-cr\``, adminStateUp: true },
      { id: "8a0f2b7e-1c1d-4c55-9d0e-000000000004", tenantId: "mallory", name: "esc\u001b]0;owned\u0007", adminStateUp: true },
      { id: "8a0f2b7e-1c1d-4c55-9d0e-000000000005", tenantId: "mallory", name: "tab\tdescription", adminStateUp: true },
      { id: "8a0f2b7e-1c1d-4c55-9d0e-000000000006", tenantId: "mallory", name: "bidi\u202egnp.exe", adminStateUp: true },
      { id: "--output=yaml", tenantId: "mallory", name: "-", adminStateUp: true },
    ];
    // VTEPs as the tunnel service lists them: the name is the switch's, as the device reports it.
    const vteps = [
      { id: "6b1d3c2a-0f4e-4a7b-8c9d-000000000001", managementIp: "192.0.2.10", managementPort: 6632, name: `sw$(touch${IFS}pwned-vtep)` },
      { id: "6b1d3c2a-0f4e-4a7b-8c9d-000000000002", managementIp: "192.0.2.11", managementPort: 6632, name: "sw `touch pwned-vtep2` *" },
      { id: "6b1d3c2a-0f4e-4a7b-8c9d-000000000003", managementIp: "192.0.2.12", managementPort: 6632, name: "sw\n$(touch pwned-vtep3)" },
      { id: "6b1d3c2a-0f4e-4a7b-8c9d-000000000004", managementIp: "192.0.2.13", managementPort: 6632, name: "--context=evil" },
    ];
    beforeAll(async () => {
      stub = createServer((req, res) => {
        const path = req.url?.split("?")[0];
        if (req.method === "GET" && (path === "/bridges" || path === "/vteps")) {
          res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(path === "/bridges" ? items : vteps));
        } else res.writeHead(404, { "content-type": "application/json" }).end('{"message":"not found","code":404}');
      });
      await new Promise<void>((r) => stub.listen(0, "127.0.0.1", () => r()));
      url = `http://127.0.0.1:${(stub.address() as { port: number }).port}`;
    });
    afterAll(() => new Promise<void>((r) => stub.close(() => r())));

    it("offers only the names and ids that read back the same, and runs none", async () => {
      const want = ["ok-name", ...items.slice(0, 6).map((i) => i.id)].sort();
      const printed = (await execFile(BIN, ["__complete", "bridge", "get"], { env: env(url) })).stdout;
      expect(printed.split("\n").filter(Boolean).sort()).toEqual(want);
      expect((await bashWords(["vnm", "bridge", "get", ""], url)).sort()).toEqual(want);
      expect((await fishWords("vnm bridge get ", url)).sort()).toEqual(want);
      expect(ran()).toEqual([]);
    });

    it("offers a device's switch names (vnm vtep get) the same way", async () => {
      const want = [...vteps.map((v) => v.id), vteps[0]!.name, vteps[1]!.name].sort();
      expect((await bashWords(["vnm", "vtep", "get", ""], url)).sort()).toEqual(want);
      expect((await bashWords(["vnm", "vtep", "describe", "sw"], url)).sort()).toEqual([vteps[0]!.name, vteps[1]!.name].sort());
      expect((await fishWords("vnm vtep get ", url)).sort()).toEqual(want);
      expect(ran()).toEqual([]);
    });
  });
});

describe("the scripts", () => {
  it("are printed for bash, zsh and fish; another shell is a usage error", () => {
    for (const shell of ["bash", "zsh", "fish"]) expect(execFileSync(BIN, ["completion", shell], { env: env() }).toString()).toMatch(/vnm completion/);
    let status = 0;
    let stderr = "";
    try {
      execFileSync(BIN, ["completion", "powershell"], { env: env(), stdio: ["ignore", "ignore", "pipe"] });
    } catch (err) {
      status = (err as { status: number }).status;
      stderr = String((err as { stderr: Buffer }).stderr);
    }
    expect([status, stderr]).toEqual([2, "no completion for powershell: bash, zsh, fish\n"]);
  });
});
