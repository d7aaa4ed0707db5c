// `npm start` as a new user runs it: in a fresh private copy of the repository (mode 700, as
// mktemp -d makes it; as root in CI), with nothing configured, twice side by side on different
// PORTs. Each runs everything in one process on its own embedded PostgreSQL (each service
// logged in as its own role) and free ports, says where the console and the API reference are
// and the generated admin password, serves the API (services reacting to each other's changes
// included) and every part's metrics, and stops on SIGTERM, and on Ctrl-C every time, with exit
// status 0, no stack trace and no process left. Quietly: no warning on a default start, and npm
// install on the machine's own Node (older than the project's) warns of nothing. With its logs
// in a file, what to do next reaches the terminal; `npm run reset` says where the data is and
// deletes it only when asked, never under a running system.
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort, ROOT, waitFor } from "../harness/harness.ts";

interface Run {
  dir: string;
  port: number;
  child: ChildProcess;
  out: string;
  err: string;
  exit?: Promise<number | null>;
}

/** A copy of the working tree (tracked and new files, not ignored ones) with node_modules hard-linked. */
function freshCopy(): string {
  const dir = mkdtempSync(join(tmpdir(), "vnm-first-run-"));
  const files = execFileSync("git", ["ls-files", "-co", "--exclude-standard", "-z"], { cwd: ROOT, encoding: "utf8" }).split("\0").filter(Boolean);
  execFileSync("cp", ["--parents", "-t", dir, ...files.filter((f) => !f.startsWith("node_modules/"))], { cwd: ROOT });
  execFileSync("cp", ["-al", join(ROOT, "node_modules"), join(dir, "node_modules")]);
  return dir;
}

/** A newcomer's environment in the checkout `dir`: nothing configured, its bin first on PATH. */
const envOf = (dir: string): NodeJS.ProcessEnv => ({ PATH: `${join(dir, "node_modules", ".bin")}:${process.env["PATH"]}`, HOME: process.env["HOME"] });

/**
 * `npm start` in `dir`, as the README says, with only PORT set; `detached`: in a process group
 * of its own, as a shell runs a command in the foreground of a terminal.
 */
function start(dir: string, port: number, detached = false, command = ["npm", "start"]): Run {
  const env = { ...envOf(dir), PORT: String(port) };
  const child = spawn(command[0]!, command.slice(1), { cwd: dir, env, stdio: ["ignore", "pipe", "pipe"], detached });
  const run: Run = { dir, port, child, out: "", err: "" };
  child.stdout!.on("data", (d: Buffer) => {
    run.out += d.toString();
  });
  child.stderr!.on("data", (d: Buffer) => {
    run.err += d.toString();
  });
  run.exit = new Promise((resolve) => child.once("exit", (code) => resolve(code)));
  return run;
}

/** The admin password a first run printed. */
const passwordOf = (run: Run) => /Generated password for admin user 'admin': (\S+)/.exec(run.out)?.[1];

/** Logs in as admin at `run` (a later run on the same data: with the first run's password). */
async function login(run: Pick<Run, "port">, password: string | undefined): Promise<string> {
  const r = await fetch(`http://127.0.0.1:${run.port}/login`, { method: "POST", headers: { authorization: `Basic ${Buffer.from(`admin:${password}`).toString("base64")}` } });
  expect(r.status).toBe(200);
  return ((await r.json()) as { key: string }).key;
}

/** The events a caller sees from now on. */
function follow(run: Run, token: string): { events: string[]; stop: () => void } {
  const controller = new AbortController();
  const events: string[] = [];
  void fetch(`http://127.0.0.1:${run.port}/events`, { headers: { "x-auth-token": token }, signal: controller.signal })
    .then(async (r) => {
      for await (const chunk of r.body!) events.push(Buffer.from(chunk).toString());
    })
    .catch(() => {});
  return { events, stop: () => controller.abort() };
}

/**
 * The sessions of the embedded database of `run` (but the one asking): their application and
 * role. Asked as its superuser, with the password and port the server keeps in its directory.
 */
async function databaseSessions(run: Run): Promise<{ application_name: string; usename: string }[]> {
  const base = /kept in (\S+)\/postgres/.exec(run.out)![1]!;
  const password = readFileSync(join(base, "postgres-password"), "utf8").trim();
  const port = readFileSync(join(base, "postgres", "postmaster.pid"), "utf8").split("\n")[3]!.trim();
  const db = new pg.Client({ connectionString: `postgres://vnm:${encodeURIComponent(password)}@127.0.0.1:${port}/vnm` });
  await db.connect();
  try {
    const r = await db.query("SELECT application_name, usename FROM pg_stat_activity WHERE datname = 'vnm' AND pid <> pg_backend_pid()");
    return r.rows;
  } finally {
    await db.end();
  }
}

const runs: Run[] = [];

beforeAll(async () => {
  const ports = [await freePort(), await freePort()];
  for (const port of ports) runs.push(start(freshCopy(), port));
  for (const run of runs) {
    const exited = run.exit!.then((code) => {
      throw new Error(`npm start exited ${code}: ${run.err}${run.out}`);
    });
    await Promise.race([waitFor(`npm start on ${run.port}`, async () => (await fetch(`http://127.0.0.1:${run.port}/readyz`)).status === 200, 90_000), exited]);
    exited.catch(() => {}); // its exit at the end is the last test's business
  }
}, 120_000);

afterAll(async () => {
  for (const run of runs) {
    if (run.child.exitCode === null) run.child.kill("SIGKILL");
    const data = /kept in (\S+)\/postgres/.exec(run.out)?.[1];
    if (data?.startsWith("/var/lib/vnm/")) rmSync(data, { recursive: true, force: true });
    rmSync(run.dir, { recursive: true, force: true });
  }
});

describe("a first run, twice side by side", () => {
  it("runs everything in one process on an embedded database, and says so first", () => {
    for (const run of runs) {
      const lines = run.out.split("\n").filter((l) => l.startsWith("[launcher]"));
      expect(lines[0]).toContain("everything in this one process");
      expect(lines[1]).toMatch(/data: embedded PostgreSQL, kept in \//);
      expect(run.out).toContain(`http://127.0.0.1:${run.port}/`);
    }
  });

  it("warns of nothing on a default start: no warning or error line, nothing on stderr", () => {
    for (const run of runs) {
      const warnings = run.out.split("\n").filter((l) => /"level":"(warn|error)"/.test(l));
      expect(warnings).toEqual([]);
      expect(run.err).toBe("");
    }
  });

  it("tells a person what to do once started: the console, the API reference and the generated password, on lines of their own", () => {
    for (const run of runs) {
      const lines = run.out.split("\n");
      const ready = lines.indexOf("[launcher] ready");
      expect(ready).toBeGreaterThan(lines.findIndex((l) => l.includes('"msg":"gateway listening"')));
      const after = lines.slice(ready);
      expect(after).toContain(`  console:   http://127.0.0.1:${run.port}/`);
      expect(after).toContain(`  API docs:  http://127.0.0.1:${run.port}/docs`);
      expect(after.some((l) => /^ {2}Generated password for admin user 'admin': \S+$/.test(l))).toBe(true);
      // Not a terminal: every other line is JSON for a machine, or a step of npm start saying
      // what it does (the launcher's, the console's build on a fresh checkout).
      const others = lines.slice(0, ready).filter((l) => l !== "" && !/^\[(launcher|console)\] /.test(l) && !l.startsWith(">"));
      for (const l of others) expect(() => JSON.parse(l), l).not.toThrow();
    }
  });

  it("serves every part's metrics at the gateway's /metrics, each family once, each part by its label", async () => {
    const run = runs[0]!;
    const token = await login(run, passwordOf(run));
    expect((await fetch(`http://127.0.0.1:${run.port}/bridges`, { headers: { "x-auth-token": token } })).status).toBe(200);
    const text = await (await fetch(`http://127.0.0.1:${run.port}/metrics`)).text();
    for (const part of ["gateway", ...readdirSync(join(run.dir, "services")).filter((d) => d !== "kit")]) expect(text, part).toContain(`part="${part}"`);
    const samples = (name: string, ...labels: string[]) => text.split("\n").filter((l) => l.startsWith(`${name}{`) && labels.every((x) => l.includes(x)));
    // The call the gateway made, as the bridge service counted it and as the gateway did.
    expect(samples("vnm_grpc_server_calls_total", 'method="vnm.bridge.v1.BridgeService/ListBridges"', 'code="OK"', 'part="bridge"')).toHaveLength(1);
    expect(samples("vnm_grpc_client_calls_total", 'method="ListBridges"', 'part="gateway"')).toHaveLength(1);
    expect(samples("vnm_outbox_backlog", 'part="tracing"')).toHaveLength(1);
    const types = text.split("\n").filter((l) => l.startsWith("# TYPE "));
    expect(new Set(types).size).toBe(types.length);
  });

  it("connects each service to its database as the service's own role, and nothing as the administrator", async () => {
    const run = runs[0]!;
    // Ready: every service answered a health check, which asks its database, so each has a session.
    expect((await fetch(`http://127.0.0.1:${run.port}/readyz`)).status).toBe(200);
    const sessions = await databaseSessions(run);
    for (const d of readdirSync(join(run.dir, "services")).filter((x) => x !== "kit")) {
      const roles = sessions.filter((s) => s.application_name === `vnm-${d}`).map((s) => s.usename);
      expect(roles.length, d).toBeGreaterThan(0);
      expect(new Set(roles), d).toEqual(new Set([`vnm_${d}`]));
    }
    // The launcher made the roles as the embedded server's superuser, and holds no session of it.
    expect(sessions.filter((s) => s.usename === "vnm")).toEqual([]);
  });

  it("serves each API on its own data: a bridge's trace goes with it, both deletions on its own /events", async () => {
    for (const run of runs) {
      const token = await login(run, passwordOf(run));
      const feed = follow(run, token);
      const headers = { "x-auth-token": token, "content-type": "application/json" };
      const base = `http://127.0.0.1:${run.port}`;
      const b = await fetch(`${base}/bridges`, { method: "POST", headers, body: JSON.stringify({ name: `on ${run.port}` }) });
      expect(b.status).toBe(201);
      const id = ((await b.json()) as { id: string }).id;
      const body = JSON.stringify({ name: "t", deviceType: "BRIDGE", deviceId: id, condition: {} });
      const t = await fetch(`${base}/traces`, { method: "POST", headers, body });
      expect(t.status).toBe(201);
      const traceId = ((await t.json()) as { id: string }).id;
      expect((await fetch(`${base}/bridges/${id}`, { method: "DELETE", headers })).status).toBe(204);
      // The tracing service reacts to the bridge service's change on the bus they share.
      await waitFor("the trace to go with its bridge", async () => (await fetch(`${base}/traces/${traceId}`, { headers })).status === 404, 10_000);
      const deleted = () => feed.events.join("").split("\n\n").filter((e) => e.includes("event: deleted"));
      await waitFor("both deletions on /events", async () => deleted().some((e) => e.includes(`/bridges/${id}`)) && deleted().some((e) => e.includes(`/traces/${traceId}`)), 10_000);
      const list = (await (await fetch(`${base}/bridges`, { headers })).json()) as { name: string }[];
      expect(list.map((x) => x.name)).toEqual([]);
      feed.stop();
    }
  });

  it("npm install on the machine's own Node warns of nothing; the scripts refuse a Node older than the project's in one line", () => {
    const run = runs[1]!;
    // The machine's node and npm, not the Node 24 the checkout brings (node_modules/.bin).
    const env = { ...envOf(run.dir), PATH: process.env["PATH"]!.split(":").filter((d) => !d.includes("node_modules")).join(":") };
    const install = spawnSync("npm", ["install", "--dry-run", "--no-audit", "--no-fund"], { cwd: run.dir, env, encoding: "utf8" });
    expect(install.status, install.stderr).toBe(0);
    expect(`${install.stdout}${install.stderr}`).not.toMatch(/warn/i);
    const version = spawnSync("node", ["--version"], { env, encoding: "utf8" }).stdout.trim();
    if (Number(/^v(\d+)/.exec(version)![1]) >= 24) return; // the machine's Node is the project's: nothing to refuse
    const refused = spawnSync("node", ["deploy/require-node.cjs"], { cwd: run.dir, env, encoding: "utf8" });
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(new RegExp(`^vnm needs Node.js 24 or newer; this is ${version} .*\\n$`));
  });

  it("npm run reset says where the data is, and refuses while the system runs on it", async () => {
    const run = runs[0]!;
    const home = /kept in (\S+)\/postgres/.exec(run.out)![1]!;
    const reset = spawnSync("npm", ["run", "--silent", "reset", "--", "--yes"], { cwd: run.dir, env: envOf(run.dir), encoding: "utf8" });
    expect(reset.status).toBe(1);
    expect(reset.stdout).toContain(`vnm's data (npm start's embedded PostgreSQL): ${home} (`);
    expect(reset.stderr).toMatch(/^vnm is running on this data \(PostgreSQL process \d+\): stop it first .* Nothing deleted\.$/m);
    expect(existsSync(join(home, "postgres", "PG_VERSION"))).toBe(true);
  });

  it("refuses a taken PORT in one line", async () => {
    const second = start(runs[0]!.dir, runs[0]!.port);
    expect(await second.exit).toBe(1);
    expect(second.err).toMatch(/^\[launcher\] port \d+ on 127\.0\.0\.1 is taken: .*PORT=/m);
    expect(second.err).not.toMatch(/\n\s+at /);
  });

  it("stops on SIGTERM: exit status 0, no stack trace, nothing left running", async () => {
    for (const run of runs) {
      run.child.kill("SIGTERM");
      expect(await run.exit).toBe(0);
      expect(run.err).not.toMatch(/\n\s+at /);
      expect(run.out).not.toMatch(/"level":"error"/);
    }
    // Processes started from either copy, or serving either copy's data.
    const marks = runs.flatMap((run) => [run.dir, /kept in (\S+)\/postgres/.exec(run.out)![1]!]);
    const left = readdirSync("/proc")
      .filter((p) => /^\d+$/.test(p))
      .map((p) => {
        try {
          return readFileSync(`/proc/${p}/cmdline`, "utf8").replace(/\0/g, " ");
        } catch {
          return "";
        }
      })
      .filter((cmd) => marks.some((m) => cmd.includes(m)));
    expect(left).toEqual([]);
  });

  it("stops on Ctrl-C (SIGINT to its process group, npm's too), pressed once or twice, with exit status 0, every time", async () => {
    const run = runs[0]!;
    // Its copy's database is free once its first run is gone (the test above stops it).
    if (run.child.exitCode === null && run.child.signalCode === null) {
      run.child.kill("SIGTERM");
      await run.exit;
    }
    for (let i = 0; i < 3; i++) {
      // Pressed twice, the second press is sent to the launcher itself (what npm start runs, in a
      // process group of its own as a terminal would): a press that comes after it stopped can
      // reach npm as npm exits with no handler left, and npm dies of it (npm's, not ours; README).
      const again = start(run.dir, await freePort(), true, i === 0 ? undefined : ["node", "deploy/launcher.ts"]);
      runs.push(again); // killed by afterAll if a failure leaves it running
      const exited = again.exit!.then((code) => {
        throw new Error(`npm start exited ${code}: ${again.err}${again.out}`);
      });
      await Promise.race([waitFor(`npm start on ${again.port}`, async () => (await fetch(`http://127.0.0.1:${again.port}/readyz`)).status === 200, 60_000), exited]);
      exited.catch(() => {});
      const stopped = new Promise<{ code: number | null; signal: string | null }>((resolve) => again.child.once("exit", (code, signal) => resolve({ code, signal })));
      process.kill(-again.child.pid!, "SIGINT");
      if (i > 0) {
        // Pressed twice, as impatient people do: the second reaches a process already stopping.
        await new Promise((r) => setTimeout(r, 30));
        try {
          process.kill(-again.child.pid!, "SIGINT");
        } catch {} // all gone already
      }
      const status = await stopped;
      expect(status, `run ${i}: ${again.err}`).toEqual({ code: 0, signal: null });
      expect(again.err).not.toMatch(/\n\s+at /);
      expect(again.out).toContain('"reason":"SIGINT"');
    }
  }, 120_000);

  it("a feed never lies across a restart: event ids go on rising, and an id from before it is a 410 Gone (re-list)", async () => {
    const run = runs[0]!;
    const password = passwordOf(run);
    const lastEventId = async (port: number): Promise<number> => {
      const base = `http://127.0.0.1:${port}`;
      const token = await login({ port }, password);
      const feed = follow({ ...run, port }, token);
      // The feed's first words (its retry hint) say it follows from now.
      await waitFor("the feed to open", async () => feed.events.length > 0, 5_000);
      const headers = { "x-auth-token": token, "content-type": "application/json" };
      expect((await fetch(`${base}/bridges`, { method: "POST", headers, body: JSON.stringify({ name: `restart ${port}` }) })).status).toBe(201);
      const ids = () => [...feed.events.join("").matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
      await waitFor("the creation on /events", async () => ids().length > 0, 10_000);
      feed.stop();
      return Math.max(...ids());
    };
    const startOnce = async () => {
      const r = start(run.dir, await freePort(), false, ["node", "deploy/launcher.ts"]);
      runs.push(r); // killed by afterAll if a failure leaves it running
      await waitFor(`the launcher on ${r.port}`, async () => (await fetch(`http://127.0.0.1:${r.port}/readyz`).catch(() => undefined))?.status === 200, 60_000);
      return r;
    };
    const first = await startOnce();
    const before = await lastEventId(first.port);
    first.child.kill("SIGTERM");
    expect(await first.exit).toBe(0);
    const second = await startOnce();
    expect(await lastEventId(second.port)).toBeGreaterThan(before);
    const token = await login(second, password);
    const stale = await fetch(`http://127.0.0.1:${second.port}/events`, { headers: { "x-auth-token": token, "last-event-id": String(before) } });
    expect(stale.status).toBe(410);
    expect(((await stale.json()) as { code: number; message: string }).message).toMatch(/no longer kept; list again/);
    second.child.kill("SIGTERM");
    expect(await second.exit).toBe(0);
  }, 120_000);

  it("npm run reset deletes the data only when asked; the next start begins afresh, its new password on the terminal while the logs go to a file", async () => {
    const run = runs[0]!;
    const home = /kept in (\S+)\/postgres/.exec(run.out)![1]!;
    const reset = (...args: string[]) => spawnSync("npm", ["run", "--silent", "reset", "--", ...args], { cwd: run.dir, env: envOf(run.dir), encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    const unasked = reset();
    expect(unasked.status).toBe(2);
    expect(unasked.stderr).toMatch(/^nothing deleted: no terminal to ask on; npm run reset -- --yes deletes without asking$/m);
    expect(existsSync(join(home, "postgres", "PG_VERSION"))).toBe(true);
    // On a terminal (script(1) gives it one) it asks, and any answer but "yes" deletes nothing.
    const declined = spawnSync("script", ["-qec", "npm run --silent reset", "/dev/null"], { cwd: run.dir, env: envOf(run.dir), input: "no\n", encoding: "utf8" });
    expect(declined.status, declined.stdout).toBe(1);
    expect(declined.stdout).toContain("Type yes to delete: ");
    expect(declined.stdout).toMatch(/^nothing deleted\r?$/m);
    expect(existsSync(join(home, "postgres", "PG_VERSION"))).toBe(true);
    const yes = reset("--yes");
    expect(yes.status, yes.stderr).toBe(0);
    expect(yes.stdout).toContain(`deleted ${home}: the next npm start begins afresh and prints a new admin password`);
    expect(existsSync(home)).toBe(false);
    expect(reset("--yes").stdout).toContain(`no data at ${home}`);

    // `npm start > start.log` typed at a terminal (script(1) gives it one), then Ctrl-C.
    const port = await freePort();
    const log = join(run.dir, "start.log");
    const child = spawn("script", ["-qfec", `exec npm start > ${log}`, "/dev/null"], { cwd: run.dir, env: { ...envOf(run.dir), PORT: String(port) }, stdio: ["pipe", "pipe", "pipe"] });
    const term: Run = { dir: run.dir, port, child, out: "", err: "" };
    runs.push(term); // killed by afterAll if a failure leaves it running
    child.stdout!.on("data", (d: Buffer) => {
      term.out += d.toString().replace(/\r/g, "");
    });
    const stopped = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    await waitFor("the summary on the terminal", async () => term.out.includes("  stop:      Ctrl-C\n"), 60_000);
    const screen = term.out.split("\n");
    expect(screen).toContain("[launcher] ready");
    expect(screen).toContain(`  console:   http://127.0.0.1:${port}/`);
    const password = passwordOf(term);
    expect(password).toBeDefined();
    expect(password).not.toBe(passwordOf(run));
    expect(screen.filter((l) => l.startsWith("{"))).toEqual([]); // no log line on the terminal
    await login(term, password);
    const written = readFileSync(log, "utf8");
    expect(written).toContain(`[launcher] ready at http://127.0.0.1:${port}/ (what to do next, on the terminal)\n`);
    expect(written).not.toContain(password!);
    expect(written).toMatch(/"msg":"gateway listening"/);
    child.stdin!.write("\x03");
    expect(await stopped).toBe(0);
  }, 120_000);
});
