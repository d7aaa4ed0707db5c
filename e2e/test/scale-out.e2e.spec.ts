// Scale-out: two gateways, and two replicas each of the bridge and lb services, on
// one NATS and one Redis. Each gateway reaches both replicas of a service through one
// VNM_<DOMAIN>_ADDR list (grpc-js round_robin, as the headless Services do in Kubernetes).
import { afterAll, beforeAll, expect, it } from "vitest";
import { httpClient, Stack } from "../harness/harness.ts";

const stack = new Stack();
const replicas = new Map<string, string[]>();
let one = "";
let two = "";
const http = httpClient(() => one, "application/json", () => stack.adminToken);

beforeAll(async () => {
  await stack.startServices();
  for (const d of ["bridge", "lb"]) replicas.set(d, [stack.addrs.get(d)!, await stack.startReplica(d)]);
  const lists = { VNM_BRIDGE_ADDR: replicas.get("bridge")!.join(","), VNM_LB_ADDR: replicas.get("lb")!.join(",") };
  one = await stack.startGateway(lists);
  two = await stack.startGateway(lists);
}, 180_000);

afterAll(async () => {
  await stack.stop();
});

/** The calls a process served for one gRPC method (every code), from its metrics port. */
async function served(metricsAddr: string, method: string): Promise<number> {
  const text = await (await fetch(`http://${metricsAddr}/metrics`)).text();
  return text
    .split("\n")
    .filter((l) => l.startsWith("vnm_grpc_server_calls_total{") && l.includes(`method="${method}"`))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
}

const metricsOf = (domain: string, addr: string) => (addr === stack.addrs.get(domain) ? stack.metricsAddrs.get(domain)! : stack.replicaMetrics.get(addr)!);

it("a write through one gateway is read through the other at once, item and cached list", async () => {
  const tenant = `scale-${stack.id}`;
  const list = () => http("GET", `${two}/bridges?tenant_id=${tenant}`);
  expect((await list()).json).toEqual([]);
  expect((await list()).json).toEqual([]); // cached now, in Redis and in the gateway
  const made: string[] = [];
  for (let i = 0; i < 6; i++) {
    const c = await http("POST", `${one}/bridges`, { name: `s${i}`, tenantId: tenant });
    expect(c.status).toBe(201);
    made.push(c.json.id);
    const read = await http("GET", `${two}/bridges/${c.json.id}`);
    expect(read.status).toBe(200);
    expect(read.json.name).toBe(`s${i}`);
    expect((await list()).json.map((b: { id: string }) => b.id)).toEqual(made);
  }
  const renamed = await http("PUT", `${two}/bridges/${made[0]}`, { name: "renamed", tenantId: tenant });
  expect(renamed.status).toBe(200);
  expect((await http("GET", `${one}/bridges/${made[0]}`)).json.name).toBe("renamed");
  expect((await http("DELETE", `${one}/bridges/${made[1]}`)).status).toBe(204);
  expect((await http("GET", `${two}/bridges/${made[1]}`)).status).toBe(404);
});

it("both replicas of each service serve calls from both gateways", async () => {
  const lb = await http("POST", `${one}/load_balancers`, { name: "scaled" });
  expect(lb.status).toBe(201);
  const bridge = await http("POST", `${one}/bridges`, { name: "scaled" });
  const before = new Map<string, number>();
  // Writes: every one is a call (reads may be answered from the gateways' cache).
  const calls = { bridge: "vnm.bridge.v1.BridgeService/UpdateBridge", lb: "vnm.lb.v1.LoadBalancerService/UpdateLoadBalancer" };
  for (const [d, method] of Object.entries(calls)) for (const a of replicas.get(d)!) before.set(a, await served(metricsOf(d, a), method));
  for (let i = 0; i < 10; i++) {
    for (const base of [one, two]) {
      expect((await http("PUT", `${base}/bridges/${bridge.json.id}`, { name: `scaled-${i}` })).status).toBe(200);
      expect((await http("PUT", `${base}/load_balancers/${lb.json.id}`, { name: `scaled-${i}` })).status).toBe(200);
    }
  }
  for (const [d, method] of Object.entries(calls)) {
    const counts = await Promise.all(replicas.get(d)!.map(async (a) => (await served(metricsOf(d, a), method)) - before.get(a)!));
    expect(counts.reduce((x, y) => x + y, 0), `${d}: ${counts.join(", ")}`).toBe(20); // ten rounds through two gateways
    for (const n of counts) expect(n, `${d} replicas served ${counts.join(", ")}`).toBeGreaterThanOrEqual(5);
  }
});
