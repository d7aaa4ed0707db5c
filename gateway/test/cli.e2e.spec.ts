// The vnm command line as an operator runs it: a subprocess against the real stack, its login
// kept in a config directory of its own, every output format, its exit statuses, and a command
// for every kind the gateway serves (compared with the catalog, not a list).
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { catalog } from "@vnm/kit";
import { afterAll, describe, expect, it } from "vitest";
import { ROOT, useStack } from "./harness.ts";

const fx = useStack();
const home = mkdtempSync(join(tmpdir(), "vnm-cli-"));

afterAll(() => rmSync(home, { recursive: true, force: true }));

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** `vnm ...` as a subprocess (stdout piped: JSON unless --output says otherwise). */
function vnm(args: string[], env: NodeJS.ProcessEnv = {}, url = fx.gw): Promise<Run> {
  const child = spawn(join(ROOT, "node_modules", ".bin", "node"), [join(ROOT, "cli", "src", "main.ts"), ...args], {
    env: { PATH: process.env["PATH"], HOME: home, XDG_CONFIG_HOME: join(home, "config"), VNM_URL: url, ...env },
  });
  const run: Run = { status: null, stdout: "", stderr: "" };
  child.stdout.on("data", (d: Buffer) => {
    run.stdout += d.toString();
  });
  child.stderr.on("data", (d: Buffer) => {
    run.stderr += d.toString();
  });
  return new Promise((resolve) => child.on("close", (code) => resolve({ ...run, status: code })));
}

describe("vnm", () => {
  it("logs in with VNM_PASSWORD and keeps the token with mode 600", async () => {
    const r = await vnm(["login", "--user", "admin"], { VNM_PASSWORD: fx.stack.adminPassword });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toContain("logged in");
    expect(statSync(join(home, "config", "vnm", "config.json")).mode & 0o777).toBe(0o600);
    expect((await vnm(["login"], { VNM_PASSWORD: "wrong-password" })).status).toBe(1);
  });

  it("creates, lists, gets, updates and deletes a top-level kind, in json, yaml and table", async () => {
    const c = await vnm(["bridge", "create", "--name", "blue", "--tenant-id", "acme", "--output", "json"]);
    expect(c.status, c.stderr).toBe(0);
    const b = JSON.parse(c.stdout);
    expect(b).toMatchObject({ name: "blue", tenantId: "acme", adminStateUp: true });
    const list = await vnm(["bridge", "list", "--tenant", "acme"]);
    expect(JSON.parse(list.stdout).map((x: { id: string }) => x.id)).toContain(b.id);
    const yaml = await vnm(["bridge", "get", b.id, "-o", "yaml"]);
    expect(yaml.stdout).toContain(`id: ${b.id}`);
    expect(yaml.stdout).toContain("name: blue");
    const table = await vnm(["bridge", "list", "-o", "table"]);
    const [header, ...rows] = table.stdout.trim().split("\n");
    expect(header).toMatch(/^id\s+tenantId\s+name/);
    expect(rows.some((row) => row.startsWith(b.id) && row.includes("blue"))).toBe(true);
    // update changes what its flags say and keeps the rest.
    const u = await vnm(["bridge", "update", b.id, "--admin-state-up", "false"]);
    expect(JSON.parse(u.stdout)).toMatchObject({ name: "blue", tenantId: "acme", adminStateUp: false });
    expect((await vnm(["bridge", "delete", b.id])).status).toBe(0);
    const gone = await vnm(["bridge", "get", b.id]);
    expect(gone.status).toBe(1);
    expect(gone.stderr).toMatch(/^error 404: /);
  });

  it("works on a nested kind with its parents as options", async () => {
    const b = JSON.parse((await vnm(["bridge", "create", "--name", "nest"])).stdout);
    const s = await vnm(["dhcp-subnet", "create", "--bridge", b.id, "--subnet-prefix", "10.0.0.0", "--subnet-length", "24"]);
    expect(s.status, s.stderr).toBe(0);
    const h = await vnm(["dhcp-host", "create", "--bridge", b.id, "--subnet", "10.0.0.0_24", "--mac-addr", "02:00:00:00:00:01", "--ip-addr", "10.0.0.5", "--name", "h1"]);
    expect(h.status, h.stderr).toBe(0);
    const hosts = JSON.parse((await vnm(["dhcp-host", "list", "--bridge", b.id, "--subnet", "10.0.0.0_24"])).stdout);
    expect(hosts.map((x: { name: string }) => x.name)).toEqual(["h1"]);
    const up = await vnm(["dhcp-host", "update", "02:00:00:00:00:01", "--bridge", b.id, "--subnet", "10.0.0.0_24", "--name", "h2"]);
    expect(JSON.parse(up.stdout)).toMatchObject({ name: "h2", ipAddr: "10.0.0.5" });
    expect((await vnm(["dhcp-host", "delete", "02:00:00:00:00:01", "--bridge", b.id, "--subnet", "10.0.0.0_24"])).status).toBe(0);
  });

  it("says what a 400 violates, one line each, with exit status 1; usage errors are 2; no gateway is 3", async () => {
    const r = await vnm(["bridge", "create", "--name", "x".repeat(300)]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^error 400: Validation error\(s\) found\n {2}name: must be at most 255 characters long\n$/);
    expect((await vnm(["bridge", "explode"])).status).toBe(2);
    expect((await vnm(["dhcp-host", "create", "--bridge", "b"])).status).toBe(2); // required flags missing
    const away = await vnm(["bridge", "list"], {}, "http://127.0.0.1:1");
    expect(away.status).toBe(3);
    expect(away.stderr).toContain("cannot reach the gateway");
  });

  it("has a command for every kind the gateway serves, and completes them", async () => {
    const help = (await vnm(["--help"])).stdout;
    const commands = new Set([...help.matchAll(/^ {2}([a-z0-9-]+)/gm)].map((m) => m[1]));
    for (const k of catalog().kinds.values()) {
      const name = k.message.name.replace(/([a-z0-9])([A-Z])/g, "$1-$2").toLowerCase();
      expect(commands, name).toContain(name);
    }
    const bash = await vnm(["completion", "bash"]);
    expect(bash.stdout).toContain("complete -F _vnm vnm");
    expect(bash.stdout).toMatch(/"dhcp-host create"\) words="[^"]*--mac-addr/);
    expect((await vnm(["completion", "fish"])).status).toBe(2);
  });
  it("logs out: the kept token is forgotten and has ended on the gateway", async () => {
    const before = JSON.parse(readFileSync(join(home, "config", "vnm", "config.json"), "utf8")) as { token: string };
    const r = await vnm(["logout"]);
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(readFileSync(join(home, "config", "vnm", "config.json"), "utf8")).token).toBeUndefined();
    const old = await fetch(`${fx.gw}/bridges`, { headers: { "x-auth-token": before.token, accept: "application/json" } });
    expect(old.status).toBe(401);
    expect((await vnm(["bridge", "list"])).status).toBe(1);
    expect((await vnm(["login"], { VNM_PASSWORD: fx.stack.adminPassword })).status).toBe(0);
  });
});
