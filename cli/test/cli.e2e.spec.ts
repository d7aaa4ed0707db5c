// The vnm command line as an operator runs it: the installed bin (node_modules/.bin/vnm, the
// bundle npm's `prepare` builds) run from /tmp under the machine's own Node (/usr/bin/node, Node
// 20 here), against a real stack from the gateway's test harness, its config in a directory of
// its own. Every output mode, names, describe, apply, watch, contexts, completion and the exit
// statuses.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { loadCatalog } from "@vnm/kit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { freePort, ROOT, Stack, waitFor } from "@vnm/e2e/harness";
import { TcpProxy } from "@vnm/e2e/tcp-proxy";

// The services the commands here reach (bridges, and identity for the logins); the gateway
// answers the other domains' routes with a 503, which nothing here asks for.
const fx = { stack: new Stack(), gw: "" };
beforeAll(async () => {
  await fx.stack.startServices("bridge", "identity");
  fx.gw = await fx.stack.startGateway({}, false);
});
afterAll(() => fx.stack.stop());
const home = mkdtempSync(join(tmpdir(), "vnm-cli-"));
const configFile = join(home, "config", "vnm", "config.json");
const BIN = join(ROOT, "node_modules", ".bin", "vnm");
/** The machine's Node when it has one (Node 20 on ours), else the one running the tests. */
const NODE = existsSync("/usr/bin/node") ? "/usr/bin/node" : process.execPath;
const PKG = JSON.parse(readFileSync(join(ROOT, "cli", "package.json"), "utf8")) as { version: string };

afterAll(() => rmSync(home, { recursive: true, force: true }));

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

const env = (url: string | null, extra: NodeJS.ProcessEnv) => {
  const e: NodeJS.ProcessEnv = { PATH: `${dirname(NODE)}:/usr/bin:/bin`, HOME: home, XDG_CONFIG_HOME: join(home, "config"), ...extra };
  if (url) e["VNM_URL"] = url;
  return e;
};

/**
 * `vnm ...` as a subprocess from /tmp, stdout piped (JSON unless -o says otherwise), no terminal;
 * VNM_URL is the stack's gateway unless `url` says otherwise (null: none, the context's).
 */
function vnm(args: string[], extra: NodeJS.ProcessEnv = {}, url: string | null = fx.gw, input?: string): Promise<Run> {
  const child = spawn(BIN, args, { cwd: tmpdir(), env: env(url, extra), stdio: ["pipe", "pipe", "pipe"] });
  child.stdin.end(input ?? "");
  const run: Run = { status: null, stdout: "", stderr: "" };
  child.stdout.on("data", (d: Buffer) => {
    run.stdout += d.toString();
  });
  child.stderr.on("data", (d: Buffer) => {
    run.stderr += d.toString();
  });
  return new Promise((resolve) => child.on("close", (code) => resolve({ ...run, status: code })));
}

/** A failure as the README promises: its status, and lines on stderr without a stack trace. */
function expectFailure(r: Run, status: number, line: RegExp): void {
  expect(r.status, r.stderr).toBe(status);
  expect(r.stderr).toMatch(line);
  expect(r.stderr).not.toMatch(/^\s+at |Error:|node:internal/m);
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: what a hostile name holds
const ESC = /[\u001b\u0007\u009b]/;

beforeAll(async () => {
  const r = await vnm(["login", "--user", "admin"], { VNM_PASSWORD: fx.stack.adminPassword });
  expect(r.status, r.stderr).toBe(0);
});

describe("the installed bin", () => {
  it("is compiled JavaScript that runs from /tmp under the machine's Node, and says both versions", async () => {
    const target = realpathSync(BIN);
    expect(target).toBe(join(ROOT, "cli", "dist", "vnm.js"));
    expect(readFileSync(target, "utf8").startsWith("#!/usr/bin/env node\n")).toBe(true);
    const major = Number(execFileSync(NODE, ["--version"]).toString().slice(1).split(".")[0]);
    expect(major).toBeGreaterThanOrEqual(20);
    const v = await vnm(["--version"]);
    expect(v.stdout.trim()).toBe(PKG.version);
    const both = await vnm(["version"]);
    expect(both.status, both.stderr).toBe(0);
    expect(both.stdout).toBe(`client: ${PKG.version}\nserver: v5.0 (${fx.gw})\n`);
  });

  it("keeps the login with mode 600; a wrong password is 1, none without a terminal is 2", async () => {
    expect(statSync(configFile).mode & 0o777).toBe(0o600);
    expectFailure(await vnm(["login"], { VNM_PASSWORD: "wrong-password" }), 1, /^error 401: /);
    const none = await vnm(["login"]);
    expectFailure(none, 2, /^no password: set VNM_PASSWORD, or run vnm login on a terminal\n$/);
  });

  it("asks for the password on a terminal without echoing it", async () => {
    // script(1) gives the bin a pseudo-terminal; the password is typed once the prompt shows.
    const child = spawn("script", ["-qec", `${BIN} login`, "/dev/null"], { cwd: tmpdir(), env: { ...env(fx.gw, {}), XDG_CONFIG_HOME: join(home, "tty") } });
    let out = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
    });
    const done = new Promise<number | null>((r) => child.on("close", r));
    await waitFor("the prompt", async () => out.includes("Password of admin:"), 10_000);
    child.stdin.write(`${fx.stack.adminPassword}\r`);
    expect(await done).toBe(0);
    expect(out).toContain(`logged in to ${fx.gw} as admin`);
    expect(out).not.toContain(fx.stack.adminPassword);
    expect(statSync(join(home, "tty", "vnm", "config.json")).mode & 0o777).toBe(0o600);
  });
});

describe("output", () => {
  let id = "";
  beforeAll(async () => {
    const c = await vnm(["bridge", "create", "--name", "blue", "--tenant-id", "acme", "-o", "json"]);
    expect(c.status, c.stderr).toBe(0);
    id = JSON.parse(c.stdout).id;
  });

  it("shows the columns that matter within 120 columns; wide adds the rest", async () => {
    const long = await vnm(["bridge", "create", "--name", "n".repeat(200), "--tenant-id", "acme", "-o", "name"]);
    expect(long.status, long.stderr).toBe(0);
    const table = await vnm(["bridge", "list", "-o", "table"]);
    const [header, ...rows] = table.stdout.trimEnd().split("\n");
    expect(header!.split(/\s+/)).toEqual(["ID", "TENANT_ID", "NAME", "ADMIN_STATE_UP"]);
    expect(rows.find((r) => r.startsWith(id))).toMatch(/^\S+\s+acme\s+blue\s+true$/);
    expect(rows.some((r) => r.includes("nnnn…"))).toBe(true);
    for (const line of table.stdout.trimEnd().split("\n")) expect(line.length).toBeLessThanOrEqual(120);
    const wide = await vnm(["bridge", "list", "-o", "wide"]);
    expect(wide.stdout.split("\n")[0]).toMatch(/^ID\s+TENANT_ID\s+NAME\s+ADMIN_STATE_UP\s+INBOUND_FILTER_ID\s+.*VXLAN_PORT_IDS$/);
    expect(wide.stdout).toContain("n".repeat(200));
  });

  it("has custom columns, names, yaml and json", async () => {
    const [custom, name, yaml, json, xml] = await Promise.all([
      vnm(["bridge", "get", id, "-o", "custom-columns=NAME:.name,TENANT:.tenantId,UP:.adminStateUp"]),
      vnm(["bridge", "get", id, "-o", "name"]),
      vnm(["bridge", "get", id, "-o", "yaml"]),
      vnm(["bridge", "get", id, "-o", "json"]),
      vnm(["bridge", "list", "-o", "xml"]),
    ]);
    expect(custom.stdout.split("\n").map((l) => l.split(/\s+/))).toEqual([["NAME", "TENANT", "UP"], ["blue", "acme", "true"], [""]]);
    expect(name.stdout).toBe(`bridge/${id}\n`);
    expect(parseYaml(yaml.stdout)).toMatchObject({ id, name: "blue", tenantId: "acme" });
    expect(JSON.parse(json.stdout)).toMatchObject({ id, name: "blue" });
    expectFailure(xml, 2, /^-o xml: the formats are table, wide, json, yaml, name or custom-columns/);
  });

  it("describes an item field by field, with its children and links", async () => {
    const s = await vnm(["dhcp-subnet", "create", "--bridge", id, "--subnet-prefix", "10.9.0.0", "--subnet-length", "24"]);
    expect(s.status, s.stderr).toBe(0);
    const d = await vnm(["bridge", "describe", "blue", "--tenant", "acme"]);
    expect(d.status, d.stderr).toBe(0);
    expect(d.stdout).toMatch(new RegExp(`^Kind:\\s+bridge\\nid:\\s+${id}\\ntenantId:\\s+acme\\nname:\\s+blue\\nadminStateUp:\\s+true\\n`));
    expect(d.stdout).toMatch(/\nLinks:\n {2}uri:\s+http:\S+\/bridges\/\S+\n/);
    expect(d.stdout).toMatch(/\nChildren:\n {2}dhcp-subnet \(1\):\n {4}10\.9\.0\.0_24\n {2}dhcp-v6-subnet \(0\):\n/);
    const none = await vnm(["dhcp-v6-subnet", "list", "--bridge", id, "-o", "table"]);
    expect([none.status, none.stdout, none.stderr]).toEqual([0, "", "No items.\n"]);
  });

  it("prints a name made of escape sequences without them on a terminal, and exactly in json and yaml", async () => {
    const hostile = "evil\u001b]0;owned\u0007\u001b[2J\u001b[1A\u009b2Jname";
    const c = await vnm(["bridge", "create", "--tenant-id", "acme", "--data", JSON.stringify({ name: hostile }), "-o", "name"]);
    expect(c.status, c.stderr).toBe(0);
    const evil = c.stdout.trim().split("/")[1]!;
    const terminal = [["list", "-o", "table"], ["list", "-o", "wide"], ["get", evil, "-o", "custom-columns=N:.name"], ["describe", evil], ["get", evil, "-o", "table"]];
    const [json, yaml, ...shown] = await Promise.all([vnm(["bridge", "get", evil, "-o", "json"]), vnm(["bridge", "get", evil, "-o", "yaml"]), ...terminal.map((a) => vnm(["bridge", ...a]))]);
    for (const [i, r] of shown.entries()) {
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout, terminal[i]!.join(" ")).not.toMatch(ESC);
    }
    expect(shown.at(-1)!.stdout).toContain("evilname");
    expect(json.stdout).not.toMatch(ESC);
    expect(JSON.parse(json.stdout).name).toBe(hostile);
    expect(yaml.stdout).not.toMatch(ESC);
    expect(parseYaml(yaml.stdout).name).toBe(hostile);
    expect((await vnm(["bridge", "delete", evil])).status).toBe(0);
  });
});

describe("names", () => {
  it("get, update and delete an item by its unique name; an ambiguous one lists the ids; --tenant narrows", async () => {
    const a = JSON.parse((await vnm(["bridge", "create", "--name", "red", "--tenant-id", "t1", "-o", "json"])).stdout).id as string;
    const b = JSON.parse((await vnm(["bridge", "create", "--name", "red", "--tenant-id", "t2", "-o", "json"])).stdout).id as string;
    const amb = await vnm(["bridge", "get", "red"]);
    expect(amb.status).toBe(1);
    expect(amb.stderr.split("\n")[0]).toBe('error: 2 bridge items are named "red"; name one by id or narrow with --tenant:');
    expect(amb.stderr).toContain(`  ${a}  (tenant t1)`);
    expect(amb.stderr).toContain(`  ${b}  (tenant t2)`);
    expect(JSON.parse((await vnm(["bridge", "get", "red", "--tenant", "t2", "-o", "json"])).stdout).id).toBe(b);
    const u = await vnm(["bridge", "update", "red", "--tenant", "t1", "--admin-state-up", "false", "-o", "json"]);
    expect(JSON.parse(u.stdout)).toMatchObject({ id: a, name: "red", tenantId: "t1", adminStateUp: false });
    expectFailure(await vnm(["bridge", "get", "no-such-bridge"]), 1, /^error 404: no bridge has the id or name "no-such-bridge"\n$/);
    const del = await vnm(["bridge", "delete", "red", b, "--tenant", "t1"]);
    expect(del.status, del.stderr).toBe(0);
    expect(del.stdout).toBe(`bridge/${a} deleted\nbridge/${b} deleted\n`);
  });

  it("work on a nested kind with its parents as options", async () => {
    const b = JSON.parse((await vnm(["bridge", "create", "--name", "nest", "-o", "json"])).stdout);
    expect((await vnm(["dhcp-subnet", "create", "--bridge", b.id, "--subnet-prefix", "10.0.0.0", "--subnet-length", "24"])).status).toBe(0);
    const where = ["--bridge", b.id, "--subnet", "10.0.0.0_24"];
    const h = await vnm(["dhcp-host", "create", ...where, "--mac-addr", "02:00:00:00:00:01", "--ip-addr", "10.0.0.5", "--name", "h1"]);
    expect(h.status, h.stderr).toBe(0);
    expect(JSON.parse((await vnm(["dhcp-host", "list", ...where, "-o", "json"])).stdout).map((x: { name: string }) => x.name)).toEqual(["h1"]);
    const up = await vnm(["dhcp-host", "update", "h1", ...where, "--ip-addr", "10.0.0.6", "-o", "json"]);
    expect(JSON.parse(up.stdout)).toMatchObject({ name: "h1", ipAddr: "10.0.0.6" });
    expect((await vnm(["dhcp-host", "delete", "02:00:00:00:00:01", ...where])).stdout).toBe("dhcp-host/02:00:00:00:00:01 deleted\n");
  });
});

describe("apply", () => {
  const dir = join(home, "manifests");
  const bridgeId = "6f1c2f64-3b1e-4d59-9a53-1c2e7d0b0a01";
  beforeAll(() => {
    rmSync(dir, { recursive: true, force: true });
    execFileSync("mkdir", ["-p", dir]);
    writeFileSync(
      join(dir, "1-bridges.yaml"),
      `kind: bridge\nid: ${bridgeId}\nname: web\ntenantId: acme\n---\nkind: bridge\nname: db\ntenantId: acme\nadminStateUp: false\n`,
    );
    writeFileSync(join(dir, "2-subnet.json"), JSON.stringify({ kind: "dhcp-subnet", bridgeId, id: "10.1.0.0_24", subnetPrefix: "10.1.0.0", subnetLength: 24 }));
  });

  it("creates what is missing, then finds everything unchanged, then updates what differs", async () => {
    const first = await vnm(["apply", "-f", dir]);
    expect(first.status, first.stderr).toBe(0);
    const dbId = JSON.parse((await vnm(["bridge", "get", "db", "--tenant", "acme", "-o", "json"])).stdout).id;
    expect(first.stdout).toBe(`bridge/${bridgeId} created\nbridge/${dbId} created\ndhcp-subnet/10.1.0.0_24 created\n`);
    const second = await vnm(["apply", "-f", dir]);
    expect(second.status, second.stderr).toBe(0);
    expect(second.stdout).toBe(`bridge/${bridgeId} unchanged\nbridge/${dbId} unchanged\ndhcp-subnet/10.1.0.0_24 unchanged\n`);
    const changed = readFileSync(join(dir, "1-bridges.yaml"), "utf8").replace("adminStateUp: false", "adminStateUp: true");
    const third = await vnm(["apply", "-f", "-"], {}, fx.gw, changed);
    expect(third.stdout).toBe(`bridge/${bridgeId} unchanged\nbridge/${dbId} updated\n`);
    expect(JSON.parse((await vnm(["bridge", "get", dbId, "-o", "json"])).stdout).adminStateUp).toBe(true);
  });

  it("refuses a bad file before sending anything, and deletes what files name", async () => {
    expectFailure(await vnm(["apply", "-f", "-"], {}, fx.gw, "kind: bridge\nname: x\n---\nkind: nope\n"), 2, /^stdin \(document 2\): no kind nope \(one of /);
    expectFailure(await vnm(["apply", "-f", "-"], {}, fx.gw, "{bad"), 2, /^stdin: /);
    expect((await vnm(["bridge", "get", "x"])).status).toBe(1);
    const del = await vnm(["delete", "-f", join(dir, "1-bridges.yaml")]);
    expect(del.status, del.stderr).toBe(0);
    // In the reverse of apply's order: the file's second bridge first.
    expect(del.stdout).toMatch(new RegExp(`^bridge/\\S+ deleted\\nbridge/${bridgeId} deleted\\n$`));
  });
});

describe("watch", () => {
  let proxy: TcpProxy;
  let watcher: ChildProcess | undefined;
  afterAll(async () => {
    watcher?.kill("SIGTERM");
    await proxy?.cut();
  });

  it("prints the list, then each change, resuming after a dropped connection", async () => {
    proxy = new TcpProxy(await freePort(), fx.gw);
    await proxy.open();
    const via = `http://127.0.0.1:${proxy.port}`;
    // Through the proxy is another gateway URL: it gets a login (a context) of its own.
    expect((await vnm(["login", "--url", via], { VNM_PASSWORD: fx.stack.adminPassword }, null)).status).toBe(0);
    const first = JSON.parse((await vnm(["bridge", "create", "--name", "w1", "--tenant-id", "watch", "-o", "json"])).stdout).id;
    watcher = spawn(BIN, ["--url", via, "bridge", "list", "--watch", "--tenant", "watch", "-o", "name"], { cwd: tmpdir(), env: env(null, {}) });
    let out = "";
    let err = "";
    watcher.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
    });
    watcher.stderr!.on("data", (d: Buffer) => {
      err += d.toString();
    });
    await waitFor("the list", async () => out.includes(`bridge/${first} listed`), 10_000);
    const second = JSON.parse((await vnm(["bridge", "create", "--name", "w2", "--tenant-id", "watch", "-o", "json"])).stdout).id;
    await vnm(["bridge", "create", "--name", "elsewhere", "--tenant-id", "not-watched"]);
    await waitFor("the creation", async () => out.includes(`bridge/${second} created`), 10_000);
    await proxy.cut();
    // Changes while the connection is down arrive after it is back (Last-Event-ID).
    await vnm(["bridge", "update", "w2", "--admin-state-up", "false"]);
    await vnm(["bridge", "delete", first]);
    await waitFor("the watcher to notice", async () => err.includes("connection"), 10_000);
    await proxy.open();
    await waitFor("the changes made meanwhile", async () => out.includes(`bridge/${first} deleted`), 15_000);
    expect(out.split("\n")).toEqual([`bridge/${first} listed`, `bridge/${second} created`, `bridge/${second} updated`, `bridge/${first} deleted`, ""]);
    expect(err).toMatch(/^connection to http:\/\/127\.0\.0\.1:\d+ lost; resuming after event \d+\n/);
  });
});

describe("contexts", () => {
  let other: Server;
  let otherUrl = "";
  const seen: IncomingHttpHeaders[] = [];
  beforeAll(async () => {
    // Records what it is sent; refuses everything, but sends /bridges/away elsewhere.
    other = createServer((req, res) => {
      seen.push(req.headers);
      if (req.url?.startsWith("/bridges/away")) res.writeHead(307, { location: `${fx.gw}/bridges` }).end();
      else res.writeHead(401, { "content-type": "application/json" }).end('{"message":"who are you","code":401}');
    });
    await new Promise<void>((r) => other.listen(0, "127.0.0.1", () => r()));
    otherUrl = `http://127.0.0.1:${(other.address() as { port: number }).port}`;
  });
  afterAll(() => new Promise<void>((r) => other.close(() => r())));

  it("never sends a gateway's token to another URL", async () => {
    const token = (JSON.parse(readFileSync(configFile, "utf8")) as { contexts: Record<string, { token?: string }> }).contexts["default"]!.token!;
    expect(token.length).toBeGreaterThan(20);
    const viaFlag = await vnm(["--url", otherUrl, "bridge", "list"]);
    expectFailure(viaFlag, 1, new RegExp(`^error 401: who are you \\(not logged in to ${otherUrl}: vnm login\\)\\n$`));
    await vnm(["bridge", "list"], {}, otherUrl); // VNM_URL
    expect(seen.length).toBe(2);
    for (const h of seen) {
      expect(h["x-auth-token"]).toBeUndefined();
      expect(h["authorization"]).toBeUndefined();
      expect(JSON.stringify(h)).not.toContain(token);
    }
  });

  it("does not follow a gateway's redirect with its token", async () => {
    const config = JSON.parse(readFileSync(configFile, "utf8")) as { contexts: Record<string, unknown> };
    config.contexts["redirecting"] = { url: otherUrl, token: "token-of-the-redirecting-gateway", issuer: otherUrl };
    writeFileSync(configFile, JSON.stringify(config));
    const r = await vnm(["--context", "redirecting", "bridge", "get", "away"], {}, null);
    expectFailure(r, 1, new RegExp(`^error 307: ${otherUrl} redirects to ${fx.gw}/bridges; vnm does not follow`));
    expect(seen.at(-1)!["x-auth-token"]).toBe("token-of-the-redirecting-gateway");
    delete config.contexts["redirecting"];
    writeFileSync(configFile, JSON.stringify(config));
  });

  it("keeps named gateways with a token each, and switches between them", async () => {
    expect((await vnm(["config", "set-context", "lab", "--url", otherUrl], {}, null)).status).toBe(0);
    const list = await vnm(["config", "get-contexts"], {}, null);
    expect(list.stdout).toMatch(/^CURRENT\s+NAME\s+URL\s+USER\s+LOGGED-IN\n\*\s+default\s+http:\/\/127\.0\.0\.1:\d+\s+admin\s+yes\n/m);
    expect(list.stdout).toMatch(new RegExp(`\\n\\s+lab\\s+${otherUrl}\\s+no\\n`));
    expect((await vnm(["config", "use-context", "lab"], {}, null)).status).toBe(0);
    expect((await vnm(["config", "current-context"], {}, null)).stdout).toBe("lab\n");
    const before = seen.length;
    expect((await vnm(["bridge", "list"], {}, null)).status).toBe(1);
    expect(seen.length).toBe(before + 1);
    expect(seen.at(-1)!["x-auth-token"]).toBeUndefined();
    // --context picks the gateway and its token for one command.
    const ok = await vnm(["--context", "default", "bridge", "list"], {}, null);
    expect(ok.status, ok.stderr).toBe(0);
    expectFailure(await vnm(["--context", "nope", "bridge", "list"], {}, null), 2, /^no context named nope/);
    expect((await vnm(["config", "use-context", "default"], {}, null)).status).toBe(0);
  });
});

describe("errors", () => {
  it("exit 1 with each violation on its own line, 2 for usage, 3 without a gateway; never a stack", async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const [violation, badJson, notObject, unknown, missing, away, badUrl] = await Promise.all([
      vnm(["bridge", "create", "--name", "x".repeat(300)]),
      vnm(["bridge", "create", "--data", "{bad"]),
      vnm(["bridge", "create", "--data", "[1]"]),
      vnm(["bridge", "explode"]),
      vnm(["dhcp-host", "create", "--bridge", "b"]),
      vnm(["bridge", "list"], {}, closed),
      vnm(["bridge", "list", "--url", "not a url"]),
    ]);
    expectFailure(violation, 1, /^error 400: Validation error\(s\) found\n {2}name: must be at most 255 characters\n$/);
    expectFailure(badJson, 2, /^--data is not JSON: .+\n$/);
    expectFailure(notObject, 2, /^--data must be a JSON object\n$/);
    expectFailure(unknown, 2, /unknown command/);
    expectFailure(missing, 2, /required option/);
    expectFailure(away, 3, new RegExp(`^cannot reach the gateway at ${closed}: connect ECONNREFUSED`));
    expectFailure(badUrl, 2, /^not a URL: not a url\n$/);
  });
});

describe("completion", () => {
  it("has a command for every kind, and completes kinds, verbs, flags and the gateway's ids and names", async () => {
    const help = (await vnm(["--help"])).stdout;
    const commands = new Set([...help.matchAll(/^ {2}([a-z0-9-]+)/gm)].map((m) => m[1]));
    for (const k of loadCatalog().kinds.values()) expect(commands).toContain(k.message.name.replace(/([a-z0-9])([A-Z])/g, "$1-$2").toLowerCase());
    const script = (await vnm(["completion", "bash"])).stdout;
    expect(script).toMatch(/'dhcp-host create'\) words=\([^)]*'--mac-addr'/);
    const b = JSON.parse((await vnm(["bridge", "create", "--name", "completed", "-o", "json"])).stdout).id as string;
    // The script itself, in bash, with vnm on the PATH as an operator has it.
    const file = join(home, "vnm-completion.bash");
    writeFileSync(file, script);
    const complete = (words: string[]) =>
      execFileSync("bash", ["--norc", "--noprofile", "-c", `source ${file}; COMP_WORDS=(${words.map((w) => `'${w}'`).join(" ")}); COMP_CWORD=${words.length - 1}; _vnm; echo "\${COMPREPLY[@]}"`], {
        env: { ...env(fx.gw, {}), PATH: `${env(fx.gw, {})["PATH"]}:${dirname(BIN)}` },
      })
        .toString()
        .trim()
        .split(" ");
    expect(complete(["vnm", "dhcp-h"])).toEqual(["dhcp-host"]);
    expect(complete(["vnm", "bridge", "desc"])).toEqual(["describe"]);
    expect(complete(["vnm", "bridge", "get", "complet"])).toEqual(["completed"]);
    expect(complete(["vnm", "bridge", "delete", b.slice(0, 8)])).toEqual([b]);
    expectFailure(await vnm(["completion", "powershell"]), 2, /^no completion for powershell: bash, zsh, fish\n$/);
  });
});

describe("logout", () => {
  const kept = () => (JSON.parse(readFileSync(configFile, "utf8")) as { contexts: Record<string, { token?: string }> }).contexts["default"]!.token;
  const status = async (token: string) => (await fetch(`${fx.gw}/bridges`, { headers: { "x-auth-token": token, accept: "application/json" } })).status;
  /** A tenant user of its own, logged in with the CLI (the default context). */
  const asAdmin = (method: string, path: string, body: unknown) =>
    fetch(path.startsWith("http") ? path : `${fx.gw}${path}`, {
      method,
      headers: { "x-auth-token": fx.stack.adminToken, "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify(body),
    });
  async function cliUser(): Promise<{ name: string; password: string; uri: string }> {
    const u = { name: `cli-${Date.now().toString(36)}`, password: "violin cactus zebra 7" };
    const made = await asAdmin("POST", "/users", { ...u, tenantId: "T", roles: ["tenant_admin"] });
    expect(made.status).toBe(201);
    const r = await vnm(["login", "--user", u.name], { VNM_PASSWORD: u.password });
    expect(r.status, r.stderr).toBe(0);
    return { ...u, uri: ((await made.json()) as { uri: string }).uri };
  }

  it("ends the kept token on the gateway and forgets it, and says so; the user's other session (the console's) goes on", async () => {
    const before = kept()!;
    const other = await fx.stack.login(fx.gw, "admin", fx.stack.adminPassword);
    const r = await vnm(["logout"]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/^logged out of .*: this login's token has ended and is forgotten \(context default\); other sessions of admin go on \(vnm logout --all ends them\)\n$/);
    expect(kept()).toBeUndefined();
    expect(await status(before)).toBe(401);
    expect(await status(other)).toBe(200);
    expectFailure(await vnm(["bridge", "list"]), 1, /^error 401: .*\(not logged in to/);
  });

  it("--all ends every token of the user, the console's too, and says so", async () => {
    const u = await cliUser();
    const before = kept()!;
    const other = await fx.stack.login(fx.gw, u.name, u.password);
    const r = await vnm(["logout", "--all"]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(new RegExp(`^logged out of .* everywhere: every token of ${u.name} has ended, on every gateway; forgotten here \\(context default\\)\n$`));
    expect(kept()).toBeUndefined();
    await waitFor("both tokens refused", async () => (await status(before)) === 401 && (await status(other)) === 401, 2_000);
  });

  it("a kept token that ended elsewhere (the user's password changed) is forgotten, and said so", async () => {
    const u = await cliUser();
    const changed = await asAdmin("PUT", u.uri, { name: u.name, password: "another violin cactus 8", tenantId: "T", roles: ["tenant_admin"] });
    expect(changed.status).toBe(200);
    await waitFor("the kept token refused", async () => (await status(kept()!)) === 401, 2_000);
    const r = await vnm(["logout"]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/: the kept token had already ended or expired; forgotten \(context default\)\n$/);
    expect(kept()).toBeUndefined();
  });
});
