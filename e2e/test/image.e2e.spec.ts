// The image's build steps, run here (no Docker engine needed): deploy/build.ts compiles the
// gateway and the services to JavaScript in a temporary directory, which is given a
// node_modules as `npm install` lays it out (the workspaces linked to their compiled copies),
// and the compiled gateway and services then serve requests with TypeScript switched off.
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { build, linkModules } from "../../deploy/build.ts";
import { DEPS, freePort, type Proc, Stack, startProcess, waitFor } from "../harness/harness.ts";

const out = mkdtempSync(join(tmpdir(), "vnm-image-"));
const stack = new Stack();
let gw = "";

/** Every file below a directory (node_modules left out). */
function files(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && !join(e.parentPath, e.name).includes("node_modules"))
    .map((e) => join(e.parentPath, e.name));
}

/** The image's entry point (deploy/entry.js), with Node's TypeScript support off: only JavaScript can load. */
function run(args: string[], env: NodeJS.ProcessEnv): Proc {
  const proc = startProcess(process.execPath, env, [], ["--no-experimental-strip-types", join(out, "deploy", "entry.js"), ...args]);
  stack.procs.push(proc);
  return proc;
}

// Each service as its own role; the migrations step alone also gets the administrator's URL, and makes the role.
const serviceEnv = (d: string) =>
  stack.env({ ...stack.addressEnv(), ...stack.credentialEnv(d), GRPC_PORT: stack.addrs.get(d)!.split(":")[1], VNM_DB_SCHEMA: stack.schema(d), DATABASE_URL: stack.databaseUrl(d) });

/** The exit status of a process run to its end. */
const exitOf = (p: Proc) => new Promise<number | null>((resolve) => (p.child.exitCode !== null ? resolve(p.child.exitCode) : p.child.once("exit", resolve)));

beforeAll(async () => {
  build(out);
  linkModules(out);
  for (const d of ["identity", "bridge"]) stack.addrs.set(d, `127.0.0.1:${await freePort()}`);
  // Migrations first, as the init containers run them: several at once, each exits 0.
  const migrations = ["identity", "bridge", "bridge"].map((d) => run([d, "--migrate-only"], { ...serviceEnv(d), VNM_DATABASE_ADMIN_URL: DEPS.databaseUrl }));
  const codes = await Promise.all(migrations.map(exitOf));
  if (codes.some((c) => c !== 0)) throw new Error(`--migrate-only failed: ${migrations.map((m) => m.output.join("")).join("\n")}`);
  for (const d of ["identity", "bridge"]) run([d], serviceEnv(d));
  const port = await freePort();
  const proc = run(["gateway"], stack.env({ ...stack.addressEnv(), ...stack.credentialEnv("gateway"), PORT: String(port) }));
  gw = `http://127.0.0.1:${port}`;
  await waitFor(
    "the compiled gateway and services",
    async () => {
      if (proc.child.exitCode !== null) throw new Error(`the compiled gateway exited: ${proc.output.join("")}`);
      const r = await fetch(`${gw}/readyz`).catch(() => undefined);
      const checks = r ? ((await r.json()) as { checks: Record<string, string> }).checks : {};
      return checks["identity"] === "ok" && checks["bridge"] === "ok";
    },
    60_000,
  );
}, 120_000);

afterAll(async () => {
  await stack.stop();
  rmSync(out, { recursive: true, force: true });
});

it("the build holds JavaScript only: no TypeScript sources, no tests, no test helpers", () => {
  const all = files(out);
  expect(all.some((f) => f.endsWith("gateway/src/main.js"))).toBe(true);
  expect(all.filter((f) => f.endsWith(".ts"))).toEqual([]);
  expect(all.filter((f) => /\.spec\.|\/test\/|testing\.js$/.test(f))).toEqual([]);
  expect(existsSync(join(out, "proto"))).toBe(true);
  expect(existsSync(join(out, "console", "dist", "index.html"))).toBe(true);
});

it("the compiled gateway serves the web console to a browser, and its files", async () => {
  const r = await fetch(`${gw}/`, { headers: { accept: "text/html" } });
  expect(r.status).toBe(200);
  expect(r.headers.get("content-type")).toBe("text/html; charset=utf-8");
  const script = /src="(\/console\/[^"]+\.js)"/.exec(await r.text())?.[1];
  expect(script).toBeDefined();
  expect((await fetch(`${gw}${script}`)).status).toBe(200);
});

it("the image's HEALTHCHECK passes for a running service and the gateway, and fails where nothing runs", async () => {
  const check = async (env: NodeJS.ProcessEnv) => exitOf(run(["--health"], env));
  expect(await check({ GRPC_PORT: stack.addrs.get("bridge")!.split(":")[1] })).toBe(0);
  expect(await check({ GRPC_PORT: "", PORT: new URL(gw).port })).toBe(0);
  expect(await check({ GRPC_PORT: String(await freePort()) })).toBe(1);
});

it("the compiled gateway and services answer: login, a write and its read", async () => {
  const token = await stack.login(gw, "admin", stack.adminPassword);
  const headers = { "x-auth-token": token, "content-type": "application/json" };
  const c = await fetch(`${gw}/bridges`, { method: "POST", headers, body: JSON.stringify({ name: "compiled" }) });
  expect(c.status).toBe(201);
  const id = ((await c.json()) as { id: string }).id;
  const r = await fetch(`${gw}/bridges/${id}`, { headers });
  expect(r.status).toBe(200);
  expect(((await r.json()) as { name: string }).name).toBe("compiled");
});
