// Routers, ports, links, hosts and bindings through the generated commands and `port link` /
// `port unlink`, as an operator runs them: the installed bin as a subprocess from /tmp under the
// machine's Node, against a real stack (the gateway's test harness) with the services they reach.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, Stack } from "@vnm/e2e/harness";

const fx = { stack: new Stack(), gw: "" };
const home = mkdtempSync(join(tmpdir(), "vnm-cli-topo-"));
const BIN = join(ROOT, "node_modules", ".bin", "vnm");
const NODE = existsSync("/usr/bin/node") ? "/usr/bin/node" : process.execPath;

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

function vnm(args: string[], extra: NodeJS.ProcessEnv = {}, input = ""): Promise<Run> {
  const env = { PATH: `${dirname(NODE)}:/usr/bin:/bin`, HOME: home, XDG_CONFIG_HOME: join(home, "config"), VNM_URL: fx.gw, ...extra };
  const child = spawn(BIN, args, { cwd: tmpdir(), env, stdio: ["pipe", "pipe", "pipe"] });
  child.stdin.end(input);
  const run: Run = { status: null, stdout: "", stderr: "" };
  child.stdout.on("data", (d: Buffer) => {
    run.stdout += d.toString();
  });
  child.stderr.on("data", (d: Buffer) => {
    run.stderr += d.toString();
  });
  return new Promise((resolve) => child.on("close", (code) => resolve({ ...run, status: code })));
}

async function json(args: string[]): Promise<Record<string, unknown> & { id: string }> {
  const r = await vnm([...args, "-o", "json"]);
  expect(r.status, `vnm ${args.join(" ")}: ${r.stderr}`).toBe(0);
  return JSON.parse(r.stdout);
}

beforeAll(async () => {
  await fx.stack.startServices("bridge", "identity", "routing", "tunnel", "lb");
  fx.gw = await fx.stack.startGateway({}, false);
  const r = await vnm(["login", "--user", "admin"], { VNM_PASSWORD: fx.stack.adminPassword });
  expect(r.status, r.stderr).toBe(0);
}, 180_000);

afterAll(async () => {
  await fx.stack.stop();
  rmSync(home, { recursive: true, force: true });
});

describe("the topology from the command line", () => {
  it("creates routers and ports on a router or a bridge named by name, links and unlinks two ports by id", async () => {
    const router = await json(["router", "create", "--name", "edge", "--tenant-id", "acme"]);
    const bridge = await json(["bridge", "create", "--name", "lan", "--tenant-id", "acme"]);
    expect((await json(["router", "get", "edge"])).id).toBe(router.id);
    // The device by its name, as other references are resolved.
    const rp = await json(["port", "create", "--router", "edge", "--port-address", "10.1.0.1", "--network-length", "24"]);
    expect(rp).toMatchObject({ type: "Router", deviceId: router.id, portAddress: "10.1.0.1" });
    const bp = await json(["port", "create", "--bridge", bridge.id]);
    expect(bp).toMatchObject({ type: "Bridge", deviceId: bridge.id });
    const neither = await vnm(["port", "create"]);
    expect(neither.status).toBe(2);
    expect(neither.stderr).toMatch(/give one of --router, --bridge/);
    expect((await json(["router", "list"])) as unknown).toEqual(expect.arrayContaining([expect.objectContaining({ id: router.id })]));

    const linked = await json(["port", "link", rp.id, bp.id]);
    expect(linked).toMatchObject({ id: rp.id, peerId: bp.id });
    expect(await json(["port", "get", bp.id])).toMatchObject({ peerId: rp.id });
    const again = await vnm(["port", "link", bp.id, rp.id]);
    expect(again.status).toBe(1);
    expect(again.stderr).toMatch(/^error 409: Ports are not linkable/);
    const table = await vnm(["port", "list", "-o", "name"]);
    expect(table.stdout.split("\n")).toEqual(expect.arrayContaining([`port/${rp.id}`, `port/${bp.id}`]));

    const un = await vnm(["port", "unlink", bp.id]);
    expect(un.status, un.stderr).toBe(0);
    expect(un.stdout).toBe(`port/${bp.id} unlinked\n`);
    expect((await json(["port", "get", rp.id])).peerId ?? null).toBeNull();
    const notLinked = await vnm(["port", "unlink", rp.id]);
    expect(notLinked.status).toBe(1);
    const missing = await vnm(["port", "link", rp.id, "no-such-port"]);
    expect(missing.status).toBe(1);
    expect(missing.stderr).not.toMatch(/^\s+at /m);
  });

  it("registers a host, puts it in a tunnel zone and binds a port to it with the generated commands", async () => {
    const bridge = await json(["bridge", "create", "--name", "bound-net"]);
    const port = await json(["port", "create", "--bridge", "bound-net"]);
    const host = await json(["host", "create", "--name", "compute-1", "--addresses", "192.0.2.7"]);
    const zone = await json(["tunnel-zone", "create", "--name", "tz1", "--type", "vxlan"]);
    await json(["tunnel-zone-host", "create", "--id", zone.id, "--host-id", host.id, "--ip-address", "192.0.2.7"]);
    const binding = await json(["host-interface-port", "create", "--id", host.id, "--port-id", port.id, "--interface-name", "tap0"]);
    expect(binding).toMatchObject({ hostId: host.id, portId: port.id, interfaceName: "tap0" });
    expect(await json(["port", "get", port.id])).toMatchObject({ hostId: host.id, interfaceName: "tap0", deviceId: bridge.id });
    const list = JSON.parse((await vnm(["host-interface-port", "list", "--id", host.id, "-o", "json"])).stdout);
    expect(list).toEqual([expect.objectContaining({ portId: port.id })]);
    const del = await vnm(["host-interface-port", "delete", port.id, "--id", host.id]);
    expect(del.status, del.stderr).toBe(0);
    expect((await json(["port", "get", port.id])).hostId ?? null).toBeNull();
  });

  it("applies a router named in a file, its route (matched again by its fields) and a port on it, then deletes them children first", async () => {
    const file = [
      "kind: route\nrouterId: file-edge\nsrcNetworkAddr: 0.0.0.0\nsrcNetworkLength: 0\ndstNetworkAddr: 10.8.0.0\ndstNetworkLength: 16\ntype: BlackHole\nweight: 100",
      "kind: router\nname: file-edge\ntenantId: files",
      "kind: port\nid: 7c1e8a52-5d1f-4c3e-9a4b-0d2f6e8b1a01\nrouterId: file-edge\nportAddress: 10.8.0.1\nnetworkLength: 16",
    ].join("\n---\n");
    const first = await vnm(["apply", "-f", "-"], {}, file);
    expect(first.status, first.stderr).toBe(0);
    const router = await json(["router", "get", "file-edge"]);
    const [routeLine, ...rest] = first.stdout.split("\n").filter((l) => !l.startsWith("router/"));
    expect(first.stdout.split("\n")[0]).toBe(`router/${router.id} created`);
    expect(routeLine).toMatch(/^route\/\S+ created$/);
    expect(rest).toEqual(["port/7c1e8a52-5d1f-4c3e-9a4b-0d2f6e8b1a01 created", ""]);
    expect(await json(["port", "get", "7c1e8a52-5d1f-4c3e-9a4b-0d2f6e8b1a01"])).toMatchObject({ deviceId: router.id, portAddress: "10.8.0.1" });
    const again = await vnm(["apply", "-f", "-"], {}, file);
    expect(again.status, again.stderr).toBe(0);
    expect(again.stdout).toBe(first.stdout.replaceAll("created", "unchanged"));
    const del = await vnm(["delete", "-f", "-"], {}, file);
    expect(del.status, del.stderr).toBe(0);
    expect(del.stdout).toBe(first.stdout.split("\n").reverse().slice(1).map((l) => `${l.replace(" created", " deleted")}\n`).join(""));
    expect((await vnm(["router", "get", router.id])).status).toBe(1);
  });

  it("delete -f: a member goes before the pool it names, whatever the file's order; alone and missing, it is a failure", async () => {
    const lb = await json(["load-balancer", "create"]);
    const pool = await json(["pool", "create", "--load-balancer-id", lb.id, "--lb-method", "ROUND_ROBIN"]);
    const member = await json(["pool-member", "create", "--pool-id", pool.id, "--address", "10.0.0.9"]);
    const file = `kind: pool-member\nid: ${member.id}\npoolId: ${pool.id}\naddress: 10.0.0.9\n---\nkind: pool\nid: ${pool.id}\nloadBalancerId: ${lb.id}\nlbMethod: ROUND_ROBIN\n`;
    // apply makes the pool before the member naming it (its poolId), so delete -f takes the member first.
    const del = await vnm(["delete", "-f", "-"], {}, file);
    expect([del.status, del.stderr]).toEqual([0, ""]);
    expect(del.stdout).toBe(`pool-member/${member.id} deleted\npool/${pool.id} deleted\n`);
    // Not deleted in this run: a missing member is a failure again.
    const again = await vnm(["delete", "-f", "-"], {}, file.split("---")[0]!);
    expect(again.status).toBe(1);
    expect(again.stderr).toMatch(/^stdin: error 404: /);
  });

  it("completes the item of link and unlink like get's, from the same safe listing", async () => {
    for (const shell of ["bash", "zsh", "fish"]) {
      const script = (await vnm(["completion", shell])).stdout;
      expect(script).toMatch(/link/);
      expect(script).toMatch(/unlink/);
    }
    const port = await json(["port", "create", "--bridge", "lan"]);
    const ids = (await vnm(["__complete", "port", "link"])).stdout.split("\n");
    expect(ids).toContain(port.id);
  });
});
