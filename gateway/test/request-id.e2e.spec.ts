// A request id follows a write end to end: the client's X-Request-Id (kept when well-formed) is
// in the gateway's access line, in the service's line for the call it made (both at debug), and
// in the change notification (payload and X-Request-Id header).
import { afterAll, beforeAll, expect, it } from "vitest";
import { type ChangeSeen, httpClient, Stack, waitFor } from "@vnm/e2e/harness";

const stack = new Stack({ LOG_LEVEL: "debug" });
let gw = "";
let events: ChangeSeen[] = [];
const http = httpClient(() => gw, "application/json", () => stack.adminToken);

beforeAll(async () => {
  events = await stack.watchChanges();
  await stack.startServices("identity", "bridge");
  gw = await stack.startGateway({}, false); // only two services run: not ready, but serving
});

afterAll(async () => {
  await stack.stop();
});

/** The JSON log lines of every process of the stack. */
const lines = () => stack.logLines();

it("travels from the client through the gateway and the service into the change notification", async () => {
  const id = `req-${stack.id}`;
  const r = await http("POST", "/bridges", { name: "traced" }, { "x-request-id": id });
  expect(r.headers.get("x-request-id")).toBe(id);
  await waitFor("the log lines", async () => lines().filter((l) => l["requestId"] === id).length >= 2, 5_000);
  const access = lines().find((l) => l["requestId"] === id && l["msg"] === "request")!;
  expect(access).toMatchObject({ service: "gateway", route: "/bridges", method: "POST", status: 201, user: "admin" });
  expect(typeof access["durationMs"]).toBe("number");
  expect(lines().find((l) => l["requestId"] === id && l["msg"] === "call")).toMatchObject({ service: "bridge", method: "vnm.bridge.v1.BridgeService/CreateBridge", code: "OK" });
  await waitFor("the change notification", async () => events.some((e) => e.data["id"] === r.json.id), 5_000);
  const change = events.find((e) => e.data["id"] === r.json.id)!;
  expect(change.data["requestId"]).toBe(id);
  expect(change.requestIdHeader).toBe(id);
});

it("a malformed X-Request-Id is replaced by one of the gateway's own", async () => {
  const r = await http("GET", "/bridges", undefined, { "x-request-id": "has spaces and <tags>" });
  expect(r.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
});
