// vnm quota get|set|reset (issue 54) as an operator runs them: the installed bin against a real
// stack with the quota service. set changes the limits it names, a create past one fails with the
// 409's message, reset restores the defaults. What a tenant's own user may do is
// e2e/test/quotas.e2e.spec.ts's (read, not change).
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, Stack } from "@vnm/e2e/harness";

const fx = { stack: new Stack(), gw: "" };
const home = mkdtempSync(join(tmpdir(), "vnm-cli-quota-"));
const BIN = join(ROOT, "node_modules", ".bin", "vnm");
const NODE = existsSync("/usr/bin/node") ? "/usr/bin/node" : process.execPath;
const TENANT = `acme-${fx.stack.id}`;

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

function vnm(args: string[], extra: NodeJS.ProcessEnv = {}): Promise<Run> {
  const env = { PATH: `${dirname(NODE)}:/usr/bin:/bin`, HOME: home, XDG_CONFIG_HOME: join(home, "config"), VNM_URL: fx.gw, ...extra };
  const child = spawn(BIN, args, { cwd: tmpdir(), env, stdio: ["ignore", "pipe", "pipe"] });
  const run: Run = { status: null, stdout: "", stderr: "" };
  child.stdout.on("data", (d: Buffer) => {
    run.stdout += d.toString();
  });
  child.stderr.on("data", (d: Buffer) => {
    run.stderr += d.toString();
  });
  return new Promise((resolve) => child.on("close", (code) => resolve({ ...run, status: code })));
}

async function quota(): Promise<{ limits: Record<string, number>; used: Record<string, number> }> {
  const r = await vnm(["quota", "get", TENANT, "-o", "json"]);
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

beforeAll(async () => {
  await fx.stack.startServices("identity", "bridge", "quota");
  fx.gw = await fx.stack.startGateway({}, false);
  const r = await vnm(["login", "--user", "admin"], { VNM_PASSWORD: fx.stack.adminPassword });
  expect(r.status, r.stderr).toBe(0);
}, 180_000);

afterAll(async () => {
  await fx.stack.stop();
  rmSync(home, { recursive: true, force: true });
});

describe("vnm quota", () => {
  it("get shows a tenant's limits and usage, set changes the named limits, reset restores the defaults", async () => {
    expect((await quota()).limits["bridges"]).toBe(-1);
    const set = await vnm(["quota", "set", TENANT, "--limits", '{"bridges": 1, "routers": 4}']);
    expect(set.status, set.stderr).toBe(0);
    const q = await quota();
    expect(q.limits).toMatchObject({ bridges: 1, routers: 4 });
    expect((await vnm(["bridge", "create", "--name", "one", "--tenant-id", TENANT])).status).toBe(0);
    const refused = await vnm(["bridge", "create", "--name", "two", "--tenant-id", TENANT]);
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain("409");
    expect(refused.stderr).toContain("The quota of bridges is reached");
    expect((await quota()).used["bridges"]).toBe(1);
    const listed = await vnm(["quota", "list", "-o", "json"]);
    expect(listed.status, listed.stderr).toBe(0);
    expect((JSON.parse(listed.stdout) as { tenantId: string }[]).map((x) => x.tenantId)).toEqual([TENANT]);
    const reset = await vnm(["quota", "reset", TENANT]);
    expect(reset.status, reset.stderr).toBe(0);
    expect((await quota()).limits).toMatchObject({ bridges: -1, routers: -1 });
    expect((await vnm(["bridge", "create", "--name", "two", "--tenant-id", TENANT])).status).toBe(0);
  });
});
