// A proto whose service is not running (or not written yet) never stops the gateway: its
// endpoints answer 503 with the error body naming the service, and the rest works.
import { afterAll, beforeAll, expect, it } from "vitest";
import { expectError, httpClient, Stack } from "../harness/harness.ts";

const stack = new Stack();
let gw = "";
const http = httpClient(() => gw, "application/json", () => stack.adminToken);

beforeAll(async () => {
  // No lb service and no VNM_LB_ADDR: the gateway starts all the same.
  await stack.startServices("identity", "bridge");
  gw = await stack.startGateway({}, false);
});

afterAll(async () => {
  await stack.stop();
});

it("serves the deployed services and answers 503 naming the one that is not deployed", async () => {
  const b = await http("POST", "/bridges", { name: "here" });
  expect(b.status).toBe(201);
  const lbs = await http("GET", "/load_balancers");
  expectError(lbs, 503);
  expect(lbs.json.message).toContain("lb service");
  expect(lbs.json.message).toContain("VNM_LB_ADDR");
  expect(lbs.headers.get("retry-after")).toBe("1");
  expectError(await http("POST", "/pools", { loadBalancerId: b.json.id, lbMethod: "ROUND_ROBIN" }), 503);
  // The gateway still serves the others: ready, degraded, naming what is missing.
  const ready = await http("GET", "/readyz");
  expect(ready.status).toBe(200);
  expect(ready.json).toMatchObject({ status: "degraded", checks: { bridge: "ok", identity: "ok", lb: "unavailable" } });
  expect(ready.json.degraded).toContain("lb");
  // The root document still lists every kind of the contract.
  expect((await http("GET", "/")).json.loadBalancers).toMatch(/\/load_balancers$/);
});

it("names a killed service in its 503", async () => {
  await stack.stopService("bridge");
  const r = await http("GET", "/bridges");
  expectError(r, 503);
  expect(r.json.message).toContain("bridge service");
  await stack.startServices("bridge");
});

it("is not ready only when no service answers: the gateway is cut off", async () => {
  await stack.stopService("bridge");
  await stack.stopService("identity");
  const ready = await http("GET", "/readyz");
  expect(ready.status).toBe(503);
  expect(ready.json).toMatchObject({ status: "unavailable", checks: { bridge: "unavailable", identity: "unavailable" } });
  expect((await http("GET", "/healthz")).status).toBe(200);
});
