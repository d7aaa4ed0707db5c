// A proto whose service is not running (or not written yet) never stops the gateway: its
// endpoints answer 503 with the error body naming the service, and the rest works.
import { afterAll, beforeAll, expect, it } from "vitest";
import { expectError, httpClient, Stack } from "./harness.ts";

const stack = new Stack();
let gw = "";
const http = httpClient(() => gw, "application/json");

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
  const ready = await http("GET", "/readyz");
  expect(ready.status).toBe(503);
  expect(ready.json.checks).toMatchObject({ bridge: "ok", identity: "ok", lb: "unavailable" });
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
