// Trace Request (v1) end to end: the tracing service beside the bridge and routing services, real
// Postgres, NATS and Redis. The rules of docs/decisions.md, "Tracing": fields and defaults, the
// exact 64-bit limit on every hop, the device a trace names (a bridge, a router or a port, asked
// of the service that has it), and traces going with their device (also when the tracing service
// was down meanwhile, and when the two race).
import { beforeAll, describe, expect, it } from "vitest";
import { expectError, httpClient, openFeed, useStack, waitFor } from "../harness/harness.ts";

const TRACE = "application/vnd.org.service.TraceRequest-v1+json";
const fx = useStack();
const http = httpClient(() => fx.gw, TRACE, () => fx.stack.adminToken);
const MAX = "9223372036854775807";
const BIG = "9007199254740993"; // 2^53 + 1: a double would read it as ...992
const JSON_TYPE = { "content-type": "application/json" };

/** Makes an item with a JSON body; its id. */
const made = async (path: string, body: Record<string, unknown>) => {
  const r = await http("POST", path, body, JSON_TYPE);
  expect(r.status, r.text).toBe(201);
  return r.json.id as string;
};
const bridge = () => made("/bridges", { name: "traced" });
const router = () => made("/routers", { name: "traced" });
const routerPort = (routerId: string) => made(`/routers/${routerId}/ports`, { portAddress: "10.0.0.1", networkAddress: "10.0.0.0", networkLength: 24 });
const bridgePort = (bridgeId: string) => made(`/bridges/${bridgeId}/ports`, {});

/** A router and a port of it that the traces below name unless they say otherwise. */
let ROUTER_ID = "";
let PORT_ID = "";
beforeAll(async () => {
  ROUTER_ID = await router();
  PORT_ID = await routerPort(ROUTER_ID);
});
const trace = (over: Record<string, unknown> = {}) => ({ name: "t", deviceType: "PORT", deviceId: PORT_ID, condition: { dlType: 2048 }, ...over });

/** The raw text of a body holds `"limit":<digits>` exactly (JSON.parse would round it). */
const limitIn = (text: string) => /"limit":(-?\d+)/.exec(text)?.[1];

describe("fields and defaults", () => {
  it("creates with defaults: enabled false, the current time, limit 2^63-1 exactly, condition as given", async () => {
    const before = Date.now();
    const body = `{"name":"t","deviceType":"PORT","deviceId":"${PORT_ID}","condition":{"nwSrc":"10.0.0.1","nested":{"a":[1,2],"big":12345678901234567890}}}`;
    const r = await http("POST", "/traces", body);
    expect(r.status).toBe(201);
    expect(r.headers.get("location")).toBe(r.json.uri);
    expect(r.json).toMatchObject({ name: "t", deviceType: "PORT", deviceId: PORT_ID, enabled: false });
    expect(Number(r.json.creationTimestampMs)).toBeGreaterThanOrEqual(before);
    expect(limitIn(r.text)).toBe(MAX);
    expect(r.text).toContain('"condition":{"nwSrc":"10.0.0.1","nested":{"a":[1,2],"big":12345678901234567890}}');
    const got = await http("GET", `/traces/${r.json.id}`);
    expect(limitIn(got.text)).toBe(MAX);
    expect(got.text).toContain('"big":12345678901234567890');
  });

  it("keeps a client's 64-bit limit exact on POST, PUT, item GET, cached list GET and the uri /events names", async () => {
    const feed = await openFeed(fx.gw, fx.stack.adminToken);
    const r = await http("POST", "/traces", `{"name":"big","deviceType":"ROUTER","deviceId":"${ROUTER_ID}","condition":{},"limit":${BIG}}`);
    expect(limitIn(r.text)).toBe(BIG);
    const id = r.json.id;
    expect(limitIn((await http("GET", `/traces/${id}`)).text)).toBe(BIG);
    const list = async () => (await http("GET", "/traces")).text;
    expect(await list()).toContain(`"id":"${id}"`);
    const limitOf = (text: string) => new RegExp(`"id":"${id}".*?"limit":(\\d+)`).exec(text)?.[1];
    expect(limitOf(await list())).toBe(BIG); // the second read comes from the cache
    const put = await http("PUT", `/traces/${id}`, `{"name":"big","deviceType":"ROUTER","deviceId":"${ROUTER_ID}","condition":{},"limit":${MAX}}`);
    expect(limitIn(put.text)).toBe(MAX);
    expect(limitOf(await list())).toBe(MAX);
    await waitFor("the trace's events", async () => feed.events.filter((e) => e.data.id === id).length >= 2, 10_000);
    const uri = feed.events.find((e) => e.data.id === id)!.data.uri;
    expect(limitIn((await http("GET", uri)).text)).toBe(MAX);
    await feed.close();
  });

  it("keeps a timestamp near 2^63 exact, and names its device in lower case", async () => {
    const r = await http("POST", "/traces", `{"name":"t","deviceType":"PORT","deviceId":"${PORT_ID.toUpperCase()}","condition":{},"creationTimestampMs":9223372036854775806}`);
    expect(r.status, r.text).toBe(201);
    expect(r.json.deviceId).toBe(PORT_ID);
    expect(/"creationTimestampMs":(\d+)/.exec((await http("GET", `/traces/${r.json.id}`)).text)?.[1]).toBe("9223372036854775806");
  });

  it("refuses bad values with 400 naming the field", async () => {
    const cases: [Record<string, unknown> | string, string][] = [
      [trace({ name: undefined }), "name"],
      [trace({ deviceType: "SWITCH" }), "deviceType"],
      [trace({ deviceId: "nope" }), "deviceId"],
      [trace({ condition: "dlType=2048" }), "condition"],
      [trace({ condition: [1, 2] }), "condition"],
      [trace({ condition: null }), "condition"],
      [trace({ enabled: "yes" }), "enabled"],
      [trace({ limit: 1.5 }), "limit"],
      [`{"name":"t","deviceType":"PORT","deviceId":"${PORT_ID}","condition":{},"limit":9223372036854775808}`, "limit"],
      [`{"name":"t","deviceType":"PORT","deviceId":"${PORT_ID}","condition":{},"limit":-9223372036854775809}`, "limit"],
    ];
    for (const [body, property] of cases) {
      const r = await http("POST", "/traces", body);
      expectError(r, 400);
      expect(r.json.violations.map((v: { property: string }) => v.property)).toContain(property);
    }
    // The strings "true" and "false" are read as booleans.
    const s = await http("POST", "/traces", trace({ enabled: "true" }));
    expect(s.status).toBe(201);
    expect(s.json.enabled).toBe(true);
  });

  it("PUT replaces: an omitted limit returns to its default; a missing trace is a 404 before its body", async () => {
    const r = await http("POST", "/traces", trace({ limit: 10, enabled: true }));
    const put = await http("PUT", `/traces/${r.json.id}`, trace());
    expect(put.status).toBe(200);
    expect(put.json.enabled).toBe(false);
    expect(limitIn(put.text)).toBe(MAX);
    expectError(await http("PUT", "/traces/00000000-0000-4000-8000-000000000009", { name: 5 }), 404);
    expectError(await http("DELETE", "/traces/00000000-0000-4000-8000-000000000009"), 404);
    expect((await http("DELETE", `/traces/${r.json.id}`)).status).toBe(204);
  });
});

describe("the device a trace names", () => {
  it("must exist in the service that has it: a 404 naming the kind and id otherwise", async () => {
    const missing = "00000000-0000-4000-8000-0000000000b2";
    for (const [deviceType, kind] of [["BRIDGE", "Bridge"], ["ROUTER", "Router"], ["PORT", "Port"]]) {
      const r = await http("POST", "/traces", trace({ deviceType, deviceId: missing }));
      expectError(r, 404);
      expect(r.json.message, deviceType).toBe(`There is no ${kind} with ID ${missing}.`);
      // A port's id is no router's, nor a router's a port's.
      const other = deviceType === "PORT" ? ROUTER_ID : PORT_ID;
      if (deviceType !== "BRIDGE") expectError(await http("POST", "/traces", trace({ deviceType, deviceId: other })), 404);
    }
    const put = await http("PUT", `/traces/${(await http("POST", "/traces", trace())).json.id}`, trace({ deviceId: missing }));
    expectError(put, 404);
    expect(put.json.message).toContain(missing);
    const b = await bridge();
    expect((await http("POST", "/traces", trace({ deviceType: "BRIDGE", deviceId: b }))).status).toBe(201);
    expect((await http("POST", "/traces", trace({ deviceType: "PORT", deviceId: await bridgePort(b) }))).status).toBe(201);
  });

  it("a bridge takes its traces, and its ports' traces, when it goes; each deletion announced", async () => {
    const b = await bridge();
    const t1 = (await http("POST", "/traces", trace({ deviceType: "BRIDGE", deviceId: b }))).json.id;
    const t2 = (await http("POST", "/traces", trace({ deviceType: "BRIDGE", deviceId: b }))).json.id;
    const onPort = (await http("POST", "/traces", trace({ deviceId: await bridgePort(b) }))).json.id;
    const other = (await http("POST", "/traces", trace())).json.id;
    expect((await http("DELETE", `/bridges/${b}`)).status).toBe(204);
    await waitFor("the bridge's traces to go", async () => {
      const codes = await Promise.all([t1, t2, onPort].map(async (t) => (await http("GET", `/traces/${t}`)).status));
      return codes.every((c) => c === 404);
    }, 10_000);
    expect((await http("GET", `/traces/${other}`)).status).toBe(200);
    const listed = (await http("GET", "/traces")).json.map((t: { id: string }) => t.id);
    expect(listed).not.toContain(t1);
    const gone = [t1, t2, onPort];
    await waitFor("their deletions on the bus", async () => fx.events.filter((e) => e.subject.endsWith("tracing.TraceRequest.deleted") && gone.includes(String(e.data["id"]))).length === 3, 10_000);
  });

  it("a port takes its traces when it goes; a router its own and its ports'", async () => {
    const r = await router();
    const [p1, p2] = [await routerPort(r), await routerPort(r)];
    const onP1 = (await http("POST", "/traces", trace({ deviceId: p1 }))).json.id;
    const onP2 = (await http("POST", "/traces", trace({ deviceId: p2 }))).json.id;
    const onRouter = (await http("POST", "/traces", trace({ deviceType: "ROUTER", deviceId: r }))).json.id;
    const status = async (t: string) => (await http("GET", `/traces/${t}`)).status;
    expect((await http("DELETE", `/ports/${p1}`)).status).toBe(204);
    await waitFor("the port's trace to go", async () => (await status(onP1)) === 404, 10_000);
    expect([await status(onP2), await status(onRouter)]).toEqual([200, 200]);
    expect((await http("DELETE", `/routers/${r}`)).status).toBe(204);
    await waitFor("the router's traces to go", async () => (await status(onP2)) === 404 && (await status(onRouter)) === 404, 10_000);
    const gone = [onP1, onP2, onRouter];
    await waitFor("their deletions on the bus", async () => fx.events.filter((e) => e.subject.endsWith("tracing.TraceRequest.deleted") && gone.includes(String(e.data["id"]))).length === 3, 10_000);
  });

  // A trace written while its device is deleted: either it sees the device gone (404) or the
  // deletion, waiting for the write's lock, takes the new trace.
  for (const [deviceType, device, remove] of [
    ["BRIDGE", bridge, (id: string) => `/bridges/${id}`],
    ["PORT", async () => routerPort(ROUTER_ID), (id: string) => `/ports/${id}`],
  ] as const) {
    it(`a trace created while its ${deviceType.toLowerCase()} is deleted never survives it`, async () => {
      for (let round = 0; round < 10; round++) {
        const d = await device();
        const [created] = await Promise.all([
          Promise.all([1, 2, 3].map(() => http("POST", "/traces", trace({ deviceType, deviceId: d })))),
          http("DELETE", remove(d)),
        ]);
        for (const r of created) expect([201, 404]).toContain(r.status);
        const ids = created.filter((r) => r.status === 201).map((r) => r.json.id as string);
        await waitFor(`round ${round}: no trace left on the deleted ${deviceType}`, async () => {
          const codes = await Promise.all(ids.map(async (id) => (await http("GET", `/traces/${id}`)).status));
          return codes.every((c) => c === 404);
        }, 10_000);
      }
    });
  }

  it("bridges and a port deleted while the tracing service is down take their traces when it is back", async () => {
    // Twenty bridges: the deletions waiting for the service are handled a batch at a time.
    const bridges = await Promise.all(Array.from({ length: 20 }, () => bridge()));
    const p = await routerPort(ROUTER_ID);
    const onBridges = await Promise.all(bridges.map(async (b) => (await http("POST", "/traces", trace({ deviceType: "BRIDGE", deviceId: b }))).json.id as string));
    const onPort = (await http("POST", "/traces", trace({ deviceId: p }))).json.id;
    const kept = (await http("POST", "/traces", trace())).json.id;
    await fx.stack.stopService("tracing");
    expectError(await http("GET", `/traces/${onPort}`), 503);
    for (const b of bridges) expect((await http("DELETE", `/bridges/${b}`)).status).toBe(204);
    expect((await http("DELETE", `/ports/${p}`)).status).toBe(204);
    await fx.stack.startServices("tracing");
    const traces = [...onBridges, onPort];
    await waitFor("the traces to go", async () => (await Promise.all(traces.map(async (t) => (await http("GET", `/traces/${t}`)).status))).every((c) => c === 404), 20_000);
    expect((await http("GET", `/traces/${kept}`)).status).toBe(200);
    await waitFor("each deletion announced once", async () => fx.events.filter((e) => e.subject.endsWith("tracing.TraceRequest.deleted") && traces.includes(String(e.data["id"]))).length === traces.length, 10_000);
  });

  it("with its device's service down a trace is a 503 naming that service, and nothing is created", async () => {
    const b = await bridge();
    const count = async () => (await http("GET", "/traces")).json.length;
    const before = await count();
    await fx.stack.stopService("bridge");
    const r = await http("POST", "/traces", trace({ deviceType: "BRIDGE", deviceId: b }));
    expectError(r, 503);
    expect(r.json.message).toContain("bridge service");
    expect(await count()).toBe(before);
    // A port's trace asks the routing service only.
    expect((await http("POST", "/traces", trace())).status).toBe(201);
    await fx.stack.startServices("bridge");
    await waitFor("the bridge service", async () => (await http("POST", "/traces", trace({ deviceType: "BRIDGE", deviceId: b }))).status === 201, 20_000);
    const now = await count();
    await fx.stack.stopService("routing");
    for (const over of [{}, { deviceType: "ROUTER", deviceId: ROUTER_ID }]) {
      const down = await http("POST", "/traces", trace(over));
      expectError(down, 503);
      expect(down.json.message).toContain("routing service");
    }
    expect(await count()).toBe(now);
    await fx.stack.startServices("routing");
    await waitFor("the routing service", async () => (await http("POST", "/traces", trace())).status === 201, 20_000);
  });
});

describe("administrators only", () => {
  it("a tenant admin gets 403 on every trace endpoint", async () => {
    const name = `ta-${fx.stack.id}`;
    await http("POST", "/users", { name, password: "tenant-password-1", tenantId: "T", roles: ["tenant_admin"] }, { "content-type": "application/json" });
    const token = await fx.stack.login(fx.gw, name, "tenant-password-1");
    for (const [m, p] of [["GET", "/traces"], ["POST", "/traces"], ["GET", `/traces/${PORT_ID}`], ["DELETE", `/traces/${PORT_ID}`]] as const) {
      expectError(await http(m, p, m === "POST" ? trace() : undefined, { "x-auth-token": token }), 403);
    }
  });
});
