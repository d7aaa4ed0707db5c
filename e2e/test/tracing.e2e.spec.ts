// Trace Request (v1) end to end: the tracing service beside the bridge service, real Postgres,
// NATS and Redis. The rules of docs/decisions.md, "Tracing": fields and defaults, the exact 64-bit limit on every hop,
// the bridge a BRIDGE trace names, and traces going with their bridge (also when the tracing
// service was down meanwhile, and when the two race).
import { describe, expect, it } from "vitest";
import { expectError, httpClient, openFeed, useStack, waitFor } from "../harness/harness.ts";

const TRACE = "application/vnd.org.service.TraceRequest-v1+json";
const fx = useStack();
const http = httpClient(() => fx.gw, TRACE, () => fx.stack.adminToken);
const MAX = "9223372036854775807";
const BIG = "9007199254740993"; // 2^53 + 1: a double would read it as ...992
const PORT_ID = "00000000-0000-4000-8000-0000000000a1";

const bridge = async () => (await http("POST", "/bridges", { name: "traced" }, { "content-type": "application/json" })).json.id as string;
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
    const r = await http("POST", "/traces", `{"name":"big","deviceType":"ROUTER","deviceId":"${PORT_ID}","condition":{},"limit":${BIG}}`);
    expect(limitIn(r.text)).toBe(BIG);
    const id = r.json.id;
    expect(limitIn((await http("GET", `/traces/${id}`)).text)).toBe(BIG);
    const list = async () => (await http("GET", "/traces")).text;
    expect(await list()).toContain(`"id":"${id}"`);
    const limitOf = (text: string) => new RegExp(`"id":"${id}".*?"limit":(\\d+)`).exec(text)?.[1];
    expect(limitOf(await list())).toBe(BIG); // the second read comes from the cache
    const put = await http("PUT", `/traces/${id}`, `{"name":"big","deviceType":"ROUTER","deviceId":"${PORT_ID}","condition":{},"limit":${MAX}}`);
    expect(limitIn(put.text)).toBe(MAX);
    expect(limitOf(await list())).toBe(MAX);
    await waitFor("the trace's events", async () => feed.events.filter((e) => e.data.id === id).length >= 2, 10_000);
    const uri = feed.events.find((e) => e.data.id === id)!.data.uri;
    expect(limitIn((await http("GET", uri)).text)).toBe(MAX);
    await feed.close();
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

describe("traces on bridges", () => {
  it("a BRIDGE trace needs a bridge the bridge service knows (404 naming it)", async () => {
    const missing = "00000000-0000-4000-8000-0000000000b2";
    const r = await http("POST", "/traces", trace({ deviceType: "BRIDGE", deviceId: missing }));
    expectError(r, 404);
    expect(r.json.message).toContain(missing);
    const b = await bridge();
    expect((await http("POST", "/traces", trace({ deviceType: "BRIDGE", deviceId: b }))).status).toBe(201);
  });

  it("go when their bridge goes, each announced", async () => {
    const b = await bridge();
    const t1 = (await http("POST", "/traces", trace({ deviceType: "BRIDGE", deviceId: b }))).json.id;
    const t2 = (await http("POST", "/traces", trace({ deviceType: "BRIDGE", deviceId: b }))).json.id;
    const other = (await http("POST", "/traces", trace())).json.id;
    expect((await http("DELETE", `/bridges/${b}`)).status).toBe(204);
    await waitFor("the bridge's traces to go", async () => (await http("GET", `/traces/${t1}`)).status === 404 && (await http("GET", `/traces/${t2}`)).status === 404, 10_000);
    expect((await http("GET", `/traces/${other}`)).status).toBe(200);
    const listed = (await http("GET", "/traces")).json.map((t: { id: string }) => t.id);
    expect(listed).not.toContain(t1);
    await waitFor("their deletions on the bus", async () => fx.events.filter((e) => e.subject.endsWith("tracing.TraceRequest.deleted") && [t1, t2].includes(String(e.data["id"]))).length === 2, 10_000);
  });

  it("a trace created while its bridge is deleted never survives it", async () => {
    for (let round = 0; round < 10; round++) {
      const b = await bridge();
      const [created] = await Promise.all([
        Promise.all([1, 2, 3].map(() => http("POST", "/traces", trace({ deviceType: "BRIDGE", deviceId: b })))),
        http("DELETE", `/bridges/${b}`),
      ]);
      for (const r of created) expect([201, 404]).toContain(r.status);
      const ids = created.filter((r) => r.status === 201).map((r) => r.json.id as string);
      await waitFor(`round ${round}: no trace left on the deleted bridge`, async () => {
        const codes = await Promise.all(ids.map(async (id) => (await http("GET", `/traces/${id}`)).status));
        return codes.every((c) => c === 404);
      }, 10_000);
    }
  });

  it("a bridge deleted while the tracing service is down takes its traces when it is back", async () => {
    const b = await bridge();
    const t = (await http("POST", "/traces", trace({ deviceType: "BRIDGE", deviceId: b }))).json.id;
    await fx.stack.stopService("tracing");
    expectError(await http("GET", `/traces/${t}`), 503);
    expect((await http("DELETE", `/bridges/${b}`)).status).toBe(204);
    await fx.stack.startServices("tracing");
    await waitFor("the trace to go", async () => (await http("GET", `/traces/${t}`)).status === 404, 20_000);
  });

  it("with the bridge service down a BRIDGE trace is a 503 naming it, and nothing is created", async () => {
    const b = await bridge();
    const before = (await http("GET", "/traces")).json.length;
    await fx.stack.stopService("bridge");
    const r = await http("POST", "/traces", trace({ deviceType: "BRIDGE", deviceId: b }));
    expectError(r, 503);
    expect(r.json.message).toContain("bridge service");
    expect((await http("GET", "/traces")).json.length).toBe(before);
    // PORT traces need no other service.
    expect((await http("POST", "/traces", trace())).status).toBe(201);
    await fx.stack.startServices("bridge");
    await waitFor("the bridge service", async () => (await http("POST", "/traces", trace({ deviceType: "BRIDGE", deviceId: b }))).status === 201, 20_000);
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
