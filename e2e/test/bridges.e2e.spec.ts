// End to end: real bridge service and gateway processes, real Postgres, NATS and Redis,
// plain HTTP. Each block maps to the Bridge (v4) kind or a rule of docs/api.md (sections in the
// test names).
import { request as httpRequest } from "node:http";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import pg from "pg";
import { DEPS, expectError, httpClient, useStack, waitFor } from "../harness/harness.ts";

const BRIDGE = "application/vnd.org.service.Bridge-v4+json";
const BRIDGES = "application/vnd.org.service.collection.Bridge-v4+json";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const fx = useStack();
const { stack } = fx;

const http = httpClient(() => fx.gw, BRIDGE, () => fx.stack.adminToken);
const create = (body: unknown) => http("POST", "/bridges", body);
/** A chain with this id (a bridge's filters must name existing chains: policy.md §3). */
const chainWithId = async (id: string) => expect((await http("POST", "/chains", { id }, { "content-type": "application/json" })).status).toBe(201);
/** A mirror (to a new router port), its id given or random (mirror lists must name existing mirrors: policy.md §4). */
const mirror = async (id?: string): Promise<string> => {
  const json = { "content-type": "application/json" };
  const router = (await http("POST", "/routers", {}, json)).json.id;
  const port = (await http("POST", `/routers/${router}/ports`, {}, json)).json.id;
  const r = await http("POST", "/mirrors", { ...(id ? { id } : {}), toPortId: port }, json);
  expect(r.status, r.text).toBe(201);
  return r.json.id;
};


describe("root document (api.md: Addresses and links)", () => {
  it("lists the bridge collection and template as absolute URLs, version v5.0", async () => {
    const r = await http("GET", "/");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("application/vnd.org.service.Application-v5+json");
    expect(r.json).toMatchObject({ uri: `${fx.gw}/`, version: "v5.0", bridges: `${fx.gw}/bridges`, bridgeTemplate: `${fx.gw}/bridges/{id}` });
  });

  it("names the patch format beside the template of each item that takes a PATCH (those with a PUT), and of no other", async () => {
    const root = (await http("GET", "/")).json;
    expect(root).toMatchObject({ bridgeAcceptPatch: "application/merge-patch+json", userAcceptPatch: "application/merge-patch+json" });
    // A client following it: the PATCH is made.
    const b = await create({ name: "before" });
    const p = await http("PATCH", `/bridges/${b.json.id}`, { name: "after" }, { "content-type": root.bridgeAcceptPatch });
    expect(p.status, p.text).toBe(200);
    expect(p.json.name).toBe("after");
    // VTEPs and routes have an item template but no PUT: nothing named, and a PATCH is a 405.
    expect(root).toMatchObject({ vtepTemplate: `${fx.gw}/vteps/{id}`, routeTemplate: `${fx.gw}/routes/{id}` });
    expect(root).not.toHaveProperty("vtepAcceptPatch");
    expect(root).not.toHaveProperty("routeAcceptPatch");
    const v = await http("PATCH", "/vteps/00000000-0000-4000-8000-000000000001", { name: "x" }, { "content-type": "application/merge-patch+json" });
    expectError(v, 405);
    expect(v.headers.get("allow")).not.toContain("PATCH");
  });
});

describe("Bridge (v4) representation", () => {
  it("POST answers 201 with Location and the full representation; defaults applied", async () => {
    const r = await create({ name: "b1" });
    expect(r.status).toBe(201);
    expect(r.headers.get("content-type")).toBe(BRIDGE);
    const id = r.json.id as string;
    expect(id).toMatch(UUID);
    expect(r.headers.get("location")).toBe(`${fx.gw}/bridges/${id}`);
    const u = `${fx.gw}/bridges/${id}`;
    expect(r.json).toEqual({
      id,
      tenantId: null,
      name: "b1",
      adminStateUp: true,
      inboundFilterId: null,
      outboundFilterId: null,
      inboundMirrorIds: [],
      outboundMirrorIds: [],
      vxlanPortIds: [],
      uri: u,
      arpTable: `${u}/arp_table`,
      dhcpSubnets: `${u}/dhcp`,
      dhcpSubnets6: `${u}/dhcpV6`,
      inboundFilter: null,
      outboundFilter: null,
      macTable: `${u}/mac_table`,
      ports: `${u}/ports`,
      peerPorts: `${u}/peer_ports`,
      vxLanPorts: `${u}/vxlan_ports`,
      macPortTemplate: `${u}/mac_table/{macAddress}_{portId}`,
      vlanMacPortTemplate: `${u}/vlans/{vlanId}/mac_table/{macAddress}_{portId}`,
      vlanMacTableTemplate: `${u}/vlans/{vlanId}/mac_table`,
    });
    const g = await http("GET", `/bridges/${id}`);
    expect(g.status).toBe(200);
    expect(g.json).toEqual(r.json);
  });

  it("keeps every POST field, takes a client id, and links the filter chains", async () => {
    const id = "0b6a1d9e-3c1f-4a55-9d7e-1a2b3c4d5e6f";
    const inF = "11111111-2222-3333-4444-555555555555";
    const body = {
      id,
      name: "full",
      tenantId: "tenant-a",
      adminStateUp: false,
      inboundFilterId: inF,
      outboundFilterId: "AAAAAAAA-2222-3333-4444-555555555555",
      inboundMirrorIds: ["66666666-2222-3333-4444-555555555555"],
      outboundMirrorIds: [],
      vxlanPortIds: ["77777777-2222-3333-4444-555555555555"],
      uri: "http://elsewhere/ignored",
      unknownField: 1,
    };
    await chainWithId(inF);
    await chainWithId("aaaaaaaa-2222-3333-4444-555555555555");
    await mirror("66666666-2222-3333-4444-555555555555");
    const r = await create(body);
    expect(r.status, r.text).toBe(201);
    const chain = await http("GET", r.json.inboundFilter, undefined, { accept: "application/json" });
    expect(chain.status, chain.text).toBe(200);
    expect(chain.json.id).toBe(inF);
    expect(r.json).toMatchObject({
      id,
      name: "full",
      tenantId: "tenant-a",
      adminStateUp: false,
      inboundFilterId: inF,
      outboundFilterId: "aaaaaaaa-2222-3333-4444-555555555555",
      inboundMirrorIds: ["66666666-2222-3333-4444-555555555555"],
      vxlanPortIds: [],
      uri: `${fx.gw}/bridges/${id}`,
      inboundFilter: `${fx.gw}/chains/${inF}`,
      outboundFilter: `${fx.gw}/chains/aaaaaaaa-2222-3333-4444-555555555555`,
    });
    const dup = await create({ id, name: "again" });
    expectError(dup, 409);
    expect(dup.json.message).toContain(id);
  });

  it("accepts a name of 255 characters, and strings for booleans as docs/api.md says", async () => {
    const r = await create({ name: "é".repeat(255), adminStateUp: "false" });
    expect(r.status).toBe(201);
    expect(r.json.name).toBe("é".repeat(255));
    expect(r.json.adminStateUp).toBe(false);
  });
});

describe("400 with violations for each bad field (api.md: Status codes, The error body, Fields)", () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ["name longer than 255", { name: "x".repeat(256) }, "name"],
    ["name not a string", { name: 42 }, "name"],
    ["name with NUL", { name: "a\u0000b" }, "name"],
    ["tenantId not a string", { tenantId: ["a"] }, "tenantId"],
    ["adminStateUp not a boolean", { adminStateUp: "yes" }, "adminStateUp"],
    ["adminStateUp a number", { adminStateUp: 1 }, "adminStateUp"],
    ["inboundFilterId not a UUID", { inboundFilterId: "nope" }, "inboundFilterId"],
    ["outboundFilterId not a UUID", { outboundFilterId: "1234" }, "outboundFilterId"],
    ["inboundMirrorIds not an array", { inboundMirrorIds: "66666666-2222-3333-4444-555555555555" }, "inboundMirrorIds"],
    ["outboundMirrorIds with a bad element", { outboundMirrorIds: ["zz"] }, "outboundMirrorIds"],
    ["id not a UUID", { id: "abc" }, "id"],
  ];
  for (const [what, body, property] of cases) {
    it(what, async () => {
      const before = (await http("GET", "/bridges")).json.length;
      const r = await create(body);
      expectError(r, 400);
      expect(r.json.violations).toEqual([expect.objectContaining({ property, message: expect.any(String) })]);
      expect((await http("GET", "/bridges")).json.length).toBe(before);
    });
  }

  it("names every offending field at once", async () => {
    const r = await create({ name: 1, adminStateUp: "maybe" });
    expectError(r, 400);
    expect(r.json.violations.map((v: { property: string }) => v.property).sort()).toEqual(["adminStateUp", "name"]);
  });

  it.each([
    ["empty body", ""],
    ["not JSON", "{name:"],
    ["a JSON array", "[]"],
    ["a JSON string", '"x"'],
  ])("%s is a 400", async (_what, body) => {
    expectError(await http("POST", "/bridges", body), 400);
  });

  it("a body that is not UTF-8 is a 400", async () => {
    expectError(await http("POST", "/bridges", Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x7d])), 400);
  });
});

describe("PUT replaces (api.md: Fields)", () => {
  it("omitted optional fields return to their defaults; id in the body is ignored", async () => {
    const c = await create({ name: "before", tenantId: "t", adminStateUp: false, inboundMirrorIds: [await mirror()] });
    const id = c.json.id as string;
    const r = await http("PUT", `/bridges/${id}`, { id: "99999999-2222-3333-4444-555555555555", name: "after" });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ id, name: "after", tenantId: null, adminStateUp: true, inboundMirrorIds: [] });
    expect((await http("GET", `/bridges/${id}`)).json.name).toBe("after");
    expectError(await http("GET", "/bridges/99999999-2222-3333-4444-555555555555"), 404);
  });

  it("a PUT back of what was read is accepted unchanged", async () => {
    const c = await create({ name: "roundtrip", tenantId: "t9" });
    const r = await http("PUT", c.json.uri, c.json);
    expect(r.status).toBe(200);
    expect(r.json).toEqual(c.json);
  });

  it("a missing target is a 404 before its body is judged", async () => {
    const missing = "12345678-1234-1234-1234-123456789abc";
    expectError(await http("PUT", `/bridges/${missing}`, { name: "x" }), 404);
    expectError(await http("PUT", `/bridges/${missing}`, { adminStateUp: "bad" }), 404);
  });

  it("a bad field on an existing bridge is a 400 and changes nothing", async () => {
    const c = await create({ name: "keep" });
    const r = await http("PUT", `/bridges/${c.json.id}`, { name: "y".repeat(300) });
    expectError(r, 400);
    expect((await http("GET", `/bridges/${c.json.id}`)).json.name).toBe("keep");
  });
});

describe("GET, list, tenant filter, DELETE", () => {
  it("?tenant_id= lists only that tenant's bridges, in creation order", async () => {
    const tenant = `tenant-${stack.id}`;
    const a = await create({ name: "a", tenantId: tenant });
    const b = await create({ name: "b", tenantId: tenant });
    await create({ name: "c", tenantId: `${tenant}-other` });
    const r = await http("GET", `/bridges?tenant_id=${tenant}`);
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe(BRIDGES);
    expect(r.json.map((x: { id: string }) => x.id)).toEqual([a.json.id, b.json.id]);
    expect((await http("GET", "/bridges?tenant_id=nobody")).json).toEqual([]);
  });

  it("a filter or a page parameter given twice is a 400 naming it, never a list unfiltered or whole", async () => {
    const tenant = `twice-${stack.id}`;
    await create({ name: "a", tenantId: tenant });
    for (const [query, property] of [
      [`tenant_id=${tenant}&tenant_id=${tenant}-other`, "tenant_id"],
      ["limit=1&limit=2", "limit"],
      ["limit=1&marker=a&marker=b", "marker"],
    ]) {
      const r = await http("GET", `/bridges?${query}`);
      expectError(r, 400);
      expect(r.json.violations.map((v: { property: string }) => v.property), query).toEqual([property]);
    }
  });

  it("DELETE answers 204, then the bridge is gone (404) and a second DELETE is 404", async () => {
    const c = await create({ name: "doomed" });
    const d = await http("DELETE", `/bridges/${c.json.id}`);
    expect(d.status).toBe(204);
    expect(d.text).toBe("");
    expectError(await http("GET", `/bridges/${c.json.id}`), 404);
    expectError(await http("DELETE", `/bridges/${c.json.id}`), 404);
  });

  it("a percent-encoded path names the same bridge as the plain one", async () => {
    const c = await create({ name: "encoded" });
    const id: string = c.json.id;
    const encoded = `%${id.charCodeAt(0).toString(16)}${id.slice(1, 8)}%2D${id.slice(9)}`;
    const r = await http("GET", `/bridges/${encoded}`);
    expect(r.status).toBe(200);
    expect(r.json.id).toBe(id);
  });

  it("a path id that is not a UUID is a 404", async () => {
    expectError(await http("GET", "/bridges/not-a-uuid"), 404);
    expectError(await http("DELETE", "/bridges/not-a-uuid"), 404);
    expectError(await http("PUT", "/bridges/not-a-uuid", { name: "x" }), 404);
  });
});

describe("protocol errors carry the error body (api.md: Media types and negotiation, Status codes)", () => {
  it("404 for an unknown path, 405 with Allow for an unsupported method", async () => {
    expectError(await http("GET", "/nothing-here"), 404);
    expectError(await http("GET", "/bridges/%zz"), 404);
    expectError(await http("GET", "/%E0%A4%A"), 404);
    const m = await http("PATCH", "/bridges");
    expectError(m, 405);
    expect(m.headers.get("allow")).toBe("GET, POST");
    const p = await http("POST", "/bridges/12345678-1234-1234-1234-123456789abc", {});
    expectError(p, 405);
    expect(p.headers.get("allow")).toBe("GET, PUT, PATCH, DELETE");
  });

  it("negotiates Accept: vendor type, JSON alone, wildcards, q-values; 406 otherwise", async () => {
    const c = await create({ name: "neg" });
    const path = `/bridges/${c.json.id}`;
    const get = (accept: string) => http("GET", path, undefined, { accept });
    expect((await get(BRIDGE)).headers.get("content-type")).toBe(BRIDGE);
    expect((await get(`${BRIDGE}; charset=utf-8`)).status).toBe(200);
    expect((await get("application/json")).headers.get("content-type")).toBe("application/json");
    expect((await get("*/*")).headers.get("content-type")).toBe(BRIDGE);
    expect((await get("application/*")).headers.get("content-type")).toBe(BRIDGE);
    expect((await get(`application/json;q=0.9, ${BRIDGE};q=0.1`)).headers.get("content-type")).toBe("application/json");
    expectError(await get("application/vnd.org.service.Bridge-v3+json"), 406);
    expectError(await get("text/html"), 406);
    expectError(await get(`${BRIDGE};q=0`), 406);
    expectError(await http("GET", "/bridges", undefined, { accept: BRIDGE }), 406);
    expect((await http("GET", "/bridges", undefined, { accept: BRIDGES })).status).toBe(200);
  });

  it("415 for a missing or foreign Content-Type or coding; JSON and gzip accepted", async () => {
    expectError(await http("POST", "/bridges", '{"name":"x"}', { "content-type": "text/plain" }), 415);
    expectError(await http("POST", "/bridges", '{"name":"x"}', { "content-type": "application/vnd.org.service.Bridge-v3+json" }), 415);
    const res = await fetch(`${fx.gw}/bridges`, {
      method: "POST",
      headers: { "x-auth-token": fx.stack.adminToken },
      body: new Uint8Array(Buffer.from('{"name":"x"}')),
    });
    expect(res.status).toBe(415);
    expect((await http("POST", "/bridges", '{"name":"j"}', { "content-type": "application/json; charset=UTF-8" })).status).toBe(201);
    const gz = await http("POST", "/bridges", gzipSync('{"name":"gz"}'), { "content-encoding": "gzip" });
    expect(gz.status).toBe(201);
    expect(gz.json.name).toBe("gz");
    expectError(await http("POST", "/bridges", '{"name":"x"}', { "content-encoding": "br" }), 415);
    expectError(await http("POST", "/bridges", Buffer.from("not gzip"), { "content-encoding": "gzip" }), 400);
  });

  it("413 for a body over 1 MiB, gzip bombs included", async () => {
    expectError(await create({ name: "x".repeat(1024 * 1024 + 10) }), 413);
    const bomb = gzipSync(Buffer.from(`{"name":"${"x".repeat(4 * 1024 * 1024)}"}`));
    expect(bomb.length).toBeLessThan(1024 * 1024);
    expectError(await http("POST", "/bridges", bomb, { "content-encoding": "gzip" }), 413);
  });

  it("413 for a body over 1 MiB sent in chunks (no Content-Length), and the connection told to close", async () => {
    const body = Buffer.from(`{"name":"${"x".repeat(1024 * 1024 + 10)}"}`);
    const r = await new Promise<{ status: number; headers: Headers; text: string }>((resolve, reject) => {
      const req = httpRequest(`${fx.gw}/bridges`, { method: "POST", headers: { "content-type": BRIDGE, "x-auth-token": fx.stack.adminToken, "transfer-encoding": "chunked" } }, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d: string) => {
          text += d;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: new Headers(res.headers as Record<string, string>), text }));
      });
      req.on("error", reject);
      for (let i = 0; i < body.length; i += 64 * 1024) req.write(body.subarray(i, i + 64 * 1024));
      req.end();
    });
    expectError({ ...r, json: JSON.parse(r.text) }, 413);
    expect(r.headers.get("connection")).toBe("close");
  });

  it("echoes X-Request-Id, and answers CORS preflights before anything else", async () => {
    const r = await http("GET", "/bridges", undefined, { "x-request-id": "abc-123" });
    expect(r.headers.get("x-request-id")).toBe("abc-123");
    expect(r.headers.get("access-control-allow-origin")).toBe("*");
    const o = await http("OPTIONS", "/bridges/whatever");
    expect(o.status).toBe(200);
    expect(o.headers.get("access-control-allow-headers")).toContain("X-Auth-Token");
    expect(o.headers.get("access-control-allow-methods")).toBe("GET, POST, PUT, PATCH, DELETE, OPTIONS");
  });

  it("/healthz and /readyz answer 200 while everything is up", async () => {
    expect((await http("GET", "/healthz")).status).toBe(200);
    const r = await http("GET", "/readyz");
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ status: "ok", degraded: [] });
    expect(r.json.checks).toMatchObject({ bridge: "ok", cache: "ok", bus: "ok" });
  });
});

describe("change notifications on NATS (architecture 4)", () => {
  it("publishes created, updated and deleted, each once, with the item's path", async () => {
    const c = await create({ name: "evented", tenantId: "tn" });
    const id = c.json.id as string;
    await http("PUT", `/bridges/${id}`, { name: "evented2", tenantId: "tn" });
    await http("DELETE", `/bridges/${id}`);
    const mine = () => fx.events.filter((e) => e.data["id"] === id);
    await waitFor("three events", async () => mine().length >= 3, 5_000);
    await new Promise((r) => setTimeout(r, 300));
    expect(mine().map((e) => e.subject)).toEqual([
      `${stack.prefix}.bridge.Bridge.created`,
      `${stack.prefix}.bridge.Bridge.updated`,
      `${stack.prefix}.bridge.Bridge.deleted`,
    ]);
    expect(mine()[0]!.data).toMatchObject({ kind: "Bridge", id, path: `/bridges/${id}`, tenantId: "tn" });
  });

  it("announces a move to another tenant a second time, below its subject (updated.tenant), and no update that keeps the tenant", async () => {
    const c = await create({ name: "mover", tenantId: "tn" });
    const id = c.json.id as string;
    await http("PUT", `/bridges/${id}`, { name: "mover2", tenantId: "tn" });
    await http("PUT", `/bridges/${id}`, { name: "mover2", tenantId: "tm" });
    const mine = () => fx.events.filter((e) => e.data["id"] === id);
    await waitFor("four events", async () => mine().length >= 4, 5_000);
    await new Promise((r) => setTimeout(r, 300));
    expect(mine().map((e) => e.subject)).toEqual([
      `${stack.prefix}.bridge.Bridge.created`,
      `${stack.prefix}.bridge.Bridge.updated`,
      `${stack.prefix}.bridge.Bridge.updated`,
      `${stack.prefix}.bridge.Bridge.updated.tenant`,
    ]);
    expect(mine()[3]!.data).toEqual(mine()[2]!.data);
    expect(mine()[3]!.data).toMatchObject({ kind: "Bridge", event: "updated", id, tenantId: "tm" });
  });
});

describe("Redis collection cache", () => {
  it("a client reads its own writes through the cached collection", async () => {
    const tenant = `cache-${stack.id}`;
    const list = () => http("GET", `/bridges?tenant_id=${tenant}`);
    expect((await list()).json).toEqual([]);
    expect((await list()).json).toEqual([]); // now served from the cache
    const c = await create({ name: "c1", tenantId: tenant });
    expect((await list()).json.map((b: { id: string }) => b.id)).toEqual([c.json.id]);
    await http("PUT", `/bridges/${c.json.id}`, { name: "c2", tenantId: tenant });
    expect((await list()).json[0].name).toBe("c2");
    await http("DELETE", `/bridges/${c.json.id}`);
    expect((await list()).json).toEqual([]);
  });

  it("cached lists keep the links of the address they were asked through", async () => {
    await create({ name: "linked", tenantId: `hosts-${stack.id}` });
    const path = `/bridges?tenant_id=hosts-${stack.id}`;
    const direct = await http("GET", path);
    await http("GET", path);
    const viaName = await http("GET", fx.gw.replace("127.0.0.1", "localhost") + path);
    expect(direct.json[0].uri.startsWith(fx.gw)).toBe(true);
    expect(viaName.json[0].uri.startsWith(fx.gw.replace("127.0.0.1", "localhost"))).toBe(true);
  });

  it("a write through another gateway replica reaches this one's cached reads via NATS", async () => {
    const other = await stack.startGateway();
    const tenant = `replica-${stack.id}`;
    const list = () => http("GET", `${fx.gw}/bridges?tenant_id=${tenant}`);
    expect((await list()).json).toEqual([]);
    expect((await list()).json).toEqual([]);
    const c = await http("POST", `${other}/bridges`, { name: "r", tenantId: tenant });
    expect(c.status).toBe(201);
    await waitFor("replica invalidation", async () => (await list()).json.length === 1, 5_000);
  });

  it("with Redis unreachable the gateway still answers correctly (slower, never an error)", async () => {
    const noRedis = await stack.startGateway({ REDIS_URL: "redis://127.0.0.1:1" }, false);
    const c = await http("POST", `${noRedis}/bridges`, { name: "no-cache" });
    expect(c.status).toBe(201);
    const l = await http("GET", `${noRedis}/bridges`);
    expect(l.status).toBe(200);
    expect(l.json.some((b: { id: string }) => b.id === c.json.id)).toBe(true);
    // Ready (it serves), degraded, naming the cache: a probe must not take it out for Redis.
    const ready = await http("GET", `${noRedis}/readyz`);
    expect(ready.status).toBe(200);
    expect(ready.json).toMatchObject({ status: "degraded", degraded: ["cache"] });
    expect(ready.json.checks.cache).toBe("unavailable");
  });
});

describe("a lost database connection", () => {
  it("connections killed mid-request cost at most a 503, never the service process", async () => {
    const db = new pg.Client({ connectionString: DEPS.databaseUrl });
    await db.connect();
    const kill = () =>
      db.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", [
        `vnm-${stack.schema("bridge")}`,
      ]);
    // Writes keep transactions (and the outbox relay's) open while connections are killed.
    const statuses: number[] = [];
    const until = Date.now() + 1_000;
    const worker = async (i: number) => {
      while (Date.now() < until) statuses.push((await create({ name: `load-${i}` })).status);
    };
    const killer = async () => {
      while (Date.now() < until) {
        await kill();
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    await Promise.all([killer(), ...Array.from({ length: 4 }, (_, i) => worker(i))]);
    await db.end();
    expect(statuses.every((st) => [201, 503].includes(st)), statuses.join(",")).toBe(true);
    expect(statuses.filter((st) => st === 503).length).toBeGreaterThan(0);
    // The service is still there and answers normally.
    await waitFor("normal answers", async () => (await create({ name: "after" })).status === 201, 5_000);
    expect((await http("GET", "/readyz")).json.status).toBe("ok");
  });
});

describe("a lost service", () => {
  it("answers 503 with the error body at once, and recovers when the service is back", async () => {
    const c = await create({ name: "survivor" });
    await stack.stopService("bridge", "SIGKILL");
    const t0 = Date.now();
    const r = await http("GET", `/bridges/${c.json.id}`);
    expect(Date.now() - t0).toBeLessThan(3_000);
    expectError(r, 503);
    expect(r.headers.get("retry-after")).toBeTruthy();
    const w = await create({ name: "during outage" });
    expectError(w, 503);
    // The gateway stays in its Service (the other domains are served), naming the lost one.
    const ready = await http("GET", "/readyz");
    expect(ready.status).toBe(200);
    expect(ready.json).toMatchObject({ status: "degraded", checks: { bridge: "unavailable" } });
    expect(ready.json.degraded).toContain("bridge");

    await stack.startServices("bridge");
    await waitFor("recovery", async () => (await http("GET", `/bridges/${c.json.id}`)).status === 200, 15_000);
    expect((await http("GET", `/bridges/${c.json.id}`)).json.name).toBe("survivor");
    expect((await http("GET", "/readyz")).json.status).toBe("ok");
  });
});

describe("paging (api.md: Lists, paging and entity tags)", () => {
  it("?limit=N&marker=<id> pages in a stable order with Link rel=next; the last page has none", async () => {
    const tenant = `pages-${stack.id}`;
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await create({ name: `p${i}`, tenantId: tenant })).json.id);
    const seen: string[] = [];
    let url: string | undefined = `/bridges?tenant_id=${tenant}&limit=2`;
    let pages = 0;
    while (url) {
      const r = await http("GET", url);
      expect(r.status).toBe(200);
      expect(r.json.length).toBeLessThanOrEqual(2);
      seen.push(...r.json.map((b: { id: string }) => b.id));
      const link = r.headers.get("link");
      url = link ? /^<([^>]+)>; rel="next"$/.exec(link)![1] : undefined;
      if (url) expect(url.startsWith(`${fx.gw}/bridges?`)).toBe(true);
      pages++;
    }
    expect(seen).toEqual(ids);
    expect(pages).toBe(3);
    // Without limit the whole collection comes back, with no Link.
    const all = await http("GET", `/bridges?tenant_id=${tenant}`);
    expect(all.json.map((b: { id: string }) => b.id)).toEqual(ids);
    expect(all.headers.get("link")).toBeNull();
    // A page ending exactly at the end has no next link.
    const exact = await http("GET", `/bridges?tenant_id=${tenant}&limit=5`);
    expect(exact.json).toHaveLength(5);
    expect(exact.headers.get("link")).toBeNull();
  });

  it("a query value that is not text (NUL) is a 400 naming it", async () => {
    const r = await http("GET", "/bridges?tenant_id=%00");
    expectError(r, 400);
    expect(r.json.violations).toEqual([{ property: "tenant_id", message: "must be valid Unicode text without NUL characters" }]);
  });

  it("an unknown or malformed marker, or a limit out of range, is a 400 naming it", async () => {
    for (const [q, property] of [
      ["marker=12345678-1234-1234-1234-123456789abc", "marker"],
      ["marker=nope", "marker"],
      ["limit=0", "limit"],
      ["limit=1001", "limit"],
      ["limit=abc", "limit"],
    ]) {
      const r = await http("GET", `/bridges?${q}`);
      expectError(r, 400);
      expect(r.json.violations.map((v: { property: string }) => v.property)).toEqual([property]);
    }
  });
});

describe("entity tags (api.md: Lists, paging and entity tags)", () => {
  it("items carry an ETag; If-None-Match answers 304; the tag changes with the item", async () => {
    const c = await create({ name: "tagged" });
    const etag = c.headers.get("etag")!;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{22}"$/);
    const g = await http("GET", c.json.uri);
    expect(g.headers.get("etag")).toBe(etag);
    const cached = await http("GET", c.json.uri, undefined, { "if-none-match": etag });
    expect(cached.status).toBe(304);
    expect(cached.text).toBe("");
    expect((await http("GET", c.json.uri, undefined, { "if-none-match": '"other"' })).status).toBe(200);
    // The same item through another address has the same tag (links are not part of it).
    const other = await http("GET", c.json.uri.replace("127.0.0.1", "localhost"));
    expect(other.headers.get("etag")).toBe(etag);
    const u = await http("PUT", c.json.uri, { name: "changed" });
    expect(u.headers.get("etag")).not.toBe(etag);
  });

  it("If-Match on PUT and DELETE: 412 when the item changed since it was read, else the write goes", async () => {
    const c = await create({ name: "v1" });
    const v1 = c.headers.get("etag")!;
    const v2 = (await http("PUT", c.json.uri, { name: "v2" }, { "if-match": v1 })).headers.get("etag")!;
    const stale = await http("PUT", c.json.uri, { name: "v3" }, { "if-match": v1 });
    expectError(stale, 412);
    expect(stale.headers.get("etag")).toBe(v2);
    expect((await http("GET", c.json.uri)).json.name).toBe("v2");
    expectError(await http("DELETE", c.json.uri, undefined, { "if-match": v1 }), 412);
    expect((await http("DELETE", c.json.uri, undefined, { "if-match": v2 })).status).toBe(204);
    expectError(await http("DELETE", c.json.uri, undefined, { "if-match": "*" }), 404);
  });

  it("If-Match compares strongly (a weak tag never matches); If-None-Match on PUT and DELETE refuses an item it names", async () => {
    const c = await create({ name: "w1" });
    const tag = c.headers.get("etag")!;
    expectError(await http("PUT", c.json.uri, { name: "w2" }, { "if-match": `W/${tag}` }), 412);
    expectError(await http("PUT", c.json.uri, { name: "w2" }, { "if-none-match": "*" }), 412);
    expectError(await http("DELETE", c.json.uri, undefined, { "if-none-match": `W/${tag}` }), 412);
    expect((await http("GET", c.json.uri)).json.name).toBe("w1");
    // A tag the item no longer carries lets the write go.
    expect((await http("PUT", c.json.uri, { name: "w2" }, { "if-none-match": '"not-its-tag"', "if-match": tag })).status).toBe(200);
    // A GET still compares weakly.
    const now = (await http("GET", c.json.uri)).headers.get("etag")!;
    expect((await http("GET", c.json.uri, undefined, { "if-none-match": `W/${now}` })).status).toBe(304);
  });
});
