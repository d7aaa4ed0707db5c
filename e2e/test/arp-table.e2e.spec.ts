// The ARP table of a bridge (IP4Mac-v1) end to end: /bridges/:id/arp_table[/<ip>_<mac>]
// (topology spec §5; docs/api.md, "ARP table"), its tenancy (the bridge's) and the cascade of a
// bridge delete. Real processes, Postgres, NATS and Redis.
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { expectError, httpClient, useStack, waitFor } from "../harness/harness.ts";

const V = (name: string) => `application/vnd.org.service.${name}+json`;
const GONE = "00000000-0000-4000-8000-000000000000";
const PASSWORD = "arp-table-password-12";

const fx = useStack();
const http = httpClient(() => fx.gw, "application/json", () => fx.stack.adminToken);
const tokens: Record<string, string> = {};
const as = (who: string) => ({ "x-auth-token": tokens[who]! });

let bridge = "";
let arp = ""; // /bridges/<bridge>/arp_table

beforeAll(async () => {
  for (const [who, role, tenantId] of [
    ["taA", "tenant_admin", "A"],
    ["tuA", "tenant_user", "A"],
    ["taB", "tenant_admin", "B"],
  ] as const) {
    const name = `${who}-${fx.stack.id}`;
    const r = await http("POST", "/users", { name, password: PASSWORD, tenantId, roles: [role] });
    expect(r.status, r.text).toBe(201);
    tokens[who] = await fx.stack.login(fx.gw, name, PASSWORD);
  }
});

beforeEach(async () => {
  const r = await http("POST", "/bridges", { name: "arp", tenantId: "A" });
  expect(r.status).toBe(201);
  bridge = r.json.id;
  arp = `/bridges/${bridge}/arp_table`;
});

describe("entries (IP4Mac-v1)", () => {
  it("create, list, get and delete; the bridge's arpTable link is the list", async () => {
    const c = await http("POST", arp, { ip: "10.1.8.5", mac: "02:00:0A:01:08:05" }, { "content-type": V("IP4Mac-v1") });
    expect(c.status).toBe(201);
    expect(c.headers.get("content-type")).toBe(V("IP4Mac-v1"));
    const uri = `${fx.gw}${arp}/10.1.8.5_02-00-0a-01-08-05`;
    expect(c.headers.get("location")).toBe(uri);
    expect(c.json).toEqual({ ip: "10.1.8.5", mac: "02:00:0a:01:08:05", uri });

    const b = (await http("GET", `/bridges/${bridge}`)).json;
    expect(b.arpTable).toBe(`${fx.gw}${arp}`);
    const list = await http("GET", b.arpTable, undefined, { accept: V("collection.IP4Mac-v1") });
    expect(list.status).toBe(200);
    expect(list.headers.get("content-type")).toBe(V("collection.IP4Mac-v1"));
    expect(list.json).toEqual([c.json]);

    const got = await http("GET", uri, undefined, { accept: V("IP4Mac-v1") });
    expect(got.status).toBe(200);
    expect(got.json).toEqual(c.json);
    // The ':' form of the MAC, in either case, names the same entry.
    expect((await http("GET", `${arp}/10.1.8.5_02:00:0A:01:08:05`)).json).toEqual(c.json);
    expect((await http("GET", `${arp}/10.1.8.5_02:00:0a:01:08:05`)).json).toEqual(c.json);

    expect((await http("DELETE", `${arp}/10.1.8.5_02:00:0a:01:08:05`)).status).toBe(204);
    expectError(await http("GET", uri), 404);
    expect((await http("GET", arp)).json).toEqual([]);
  });

  it("DELETE of an entry that is not there is a 404 (MidoNet: 204)", async () => {
    expectError(await http("DELETE", `${arp}/10.0.0.1_02-00-00-00-00-01`), 404);
    await http("POST", arp, { ip: "10.0.0.1", mac: "02:00:00:00:00:01" });
    // The address with another MAC, or the MAC with another address, is another entry.
    expectError(await http("DELETE", `${arp}/10.0.0.1_02-00-00-00-00-02`), 404);
    expectError(await http("GET", `${arp}/10.0.0.2_02-00-00-00-00-01`), 404);
    expect((await http("DELETE", `${arp}/10.0.0.1_02-00-00-00-00-01`)).status).toBe(204);
    expectError(await http("DELETE", `${arp}/10.0.0.1_02-00-00-00-00-01`), 404);
  });

  it("the same pair twice is a 409 with the error body; another MAC for the address, or the same pair on another bridge, is fine", async () => {
    expect((await http("POST", arp, { ip: "10.0.0.1", mac: "02:00:00:00:00:01" })).status).toBe(201);
    const dup = await http("POST", arp, { ip: "10.0.0.1", mac: "02:00:00:00:00:01" });
    expectError(dup, 409);
    expect(dup.json.message).toContain("10.0.0.1");
    expect(dup.json.message).toContain("02:00:00:00:00:01");
    // Upper case is the same MAC.
    expectError(await http("POST", arp, { ip: "10.0.0.1", mac: "02:00:00:00:00:01".toUpperCase() }), 409);
    expect((await http("POST", arp, { ip: "10.0.0.1", mac: "02:00:00:00:00:02" })).status).toBe(201);
    const other = (await http("POST", "/bridges", { tenantId: "A" })).json.id;
    expect((await http("POST", `/bridges/${other}/arp_table`, { ip: "10.0.0.1", mac: "02:00:00:00:00:01" })).status).toBe(201);
    const listed = (await http("GET", arp)).json.map((e: { ip: string; mac: string }) => `${e.ip} ${e.mac}`);
    expect(listed).toEqual(["10.0.0.1 02:00:00:00:00:01", "10.0.0.1 02:00:00:00:00:02"]);
  });

  it("20 parallel creates of the same pair yield one 201 and 19 409s", async () => {
    const rs = await Promise.all(Array.from({ length: 20 }, () => http("POST", arp, { ip: "10.0.0.9", mac: "02:00:00:00:00:09" })));
    expect(rs.filter((r) => r.status === 201)).toHaveLength(1);
    expect(rs.filter((r) => r.status === 409)).toHaveLength(19);
    expect((await http("GET", arp)).json).toHaveLength(1);
  });

  it.each([
    [{ mac: "02:00:00:00:00:01" }, "ip"],
    [{ ip: "10.0.0.1" }, "mac"],
    [{ ip: "10.0.0.256", mac: "02:00:00:00:00:01" }, "ip"],
    [{ ip: "10.0.0", mac: "02:00:00:00:00:01" }, "ip"],
    [{ ip: "2001:db8::1", mac: "02:00:00:00:00:01" }, "ip"],
    [{ ip: 167772161, mac: "02:00:00:00:00:01" }, "ip"],
    [{ ip: "10.0.0.1", mac: "02-00-00-00-00-01" }, "mac"],
    [{ ip: "10.0.0.1", mac: "2:0:0:0:0:1" }, "mac"],
    [{ ip: "10.0.0.1", mac: "nonsense" }, "mac"],
  ])("%j is a 400 naming %s, and nothing is written", async (body, property) => {
    const r = await http("POST", arp, body);
    expectError(r, 400);
    expect(r.json.violations.map((v: { property: string }) => v.property)).toEqual([property]);
    expect((await http("GET", arp)).json).toEqual([]);
  });

  it("a missing bridge is a 404 on every method, before the body is judged", async () => {
    const gone = `/bridges/${GONE}/arp_table`;
    expectError(await http("GET", gone), 404);
    expectError(await http("POST", gone, { ip: "10.0.0.1", mac: "02:00:00:00:00:01" }), 404);
    expectError(await http("POST", gone, { ip: "bad" }), 404);
    expectError(await http("GET", `${gone}/10.0.0.1_02-00-00-00-00-01`), 404);
    expectError(await http("DELETE", `${gone}/10.0.0.1_02-00-00-00-00-01`), 404);
  });

  it("an item path that names no entry (bad address, bad MAC, no '_') is a 404", async () => {
    for (const seg of ["10.0.0.1", "10.0.0.256_02-00-00-00-00-01", "10.0.0.1_02-00-00-00-00", "10.0.0.1_zz-00-00-00-00-01", "_02-00-00-00-00-01", "2001:db8::1_02-00-00-00-00-01"]) {
      expectError(await http("GET", `${arp}/${seg}`), 404);
      expectError(await http("DELETE", `${arp}/${seg}`), 404);
    }
  });

  it("no PUT: 405 with Allow", async () => {
    await http("POST", arp, { ip: "10.0.0.1", mac: "02:00:00:00:00:01" });
    const r = await http("PUT", `${arp}/10.0.0.1_02-00-00-00-00-01`, { ip: "10.0.0.2", mac: "02:00:00:00:00:01" });
    expectError(r, 405);
    expect(r.headers.get("allow")).toBe("GET, DELETE");
    expect((await http("GET", arp)).json.map((e: { ip: string }) => e.ip)).toEqual(["10.0.0.1"]);
  });

  it("the OpenAPI document states the rules the service enforces: an IPv4 address and a MAC", async () => {
    const s = (await http("GET", "/openapi.json")).json.components.schemas["vnm.bridge.v1.Ip4MacPair"];
    const keywords = (x: { anyOf?: object[] }) => Object.assign({}, ...(x.anyOf ?? []), x);
    expect(keywords(s.properties.ip)).toMatchObject({ format: "ipv4" });
    expect(keywords(s.properties.mac)).toMatchObject({ pattern: "^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$" });
    expect(s.required).toEqual(expect.arrayContaining(["ip", "mac"]));
  });
});

describe("tenancy: entries belong to the bridge's tenant", () => {
  const entry = { ip: "10.2.0.1", mac: "02:00:00:00:02:01" };

  it("the tenant's admin writes and reads its bridge's table; its user only reads (403 on writes)", async () => {
    const c = await http("POST", arp, entry, as("taA"));
    expect(c.status, c.text).toBe(201);
    const item = `${arp}/10.2.0.1_02-00-00-00-02-01`;
    expect((await http("GET", arp, undefined, as("tuA"))).json).toEqual([c.json]);
    expect((await http("GET", item, undefined, as("tuA"))).status).toBe(200);
    expectError(await http("POST", arp, { ...entry, ip: "10.2.0.2" }, as("tuA")), 403);
    expectError(await http("DELETE", item, undefined, as("tuA")), 403);
    expect((await http("DELETE", item, undefined, as("taA"))).status).toBe(204);
  });

  it("another tenant gets 404 on every method, naming nothing of the other tenant, and changes nothing", async () => {
    await http("POST", arp, entry);
    const item = `${arp}/10.2.0.1_02-00-00-00-02-01`;
    const answers = [
      await http("GET", arp, undefined, as("taB")),
      await http("POST", arp, { ...entry, ip: "10.2.0.3" }, as("taB")),
      await http("POST", arp, { ip: "bad" }, as("taB")),
      await http("GET", item, undefined, as("taB")),
      await http("DELETE", item, undefined, as("taB")),
    ];
    for (const r of answers) {
      expectError(r, 404);
      expect(r.text).not.toContain('"A"');
    }
    // The same answers as under a bridge that does not exist, but for the id.
    const ghost = await http("GET", `/bridges/${GONE}/arp_table`, undefined, as("taB"));
    expect(answers[0]!.json.message.replace(bridge, "<id>")).toBe(ghost.json.message.replace(GONE, "<id>"));
    expect((await http("GET", arp)).json.map((e: { ip: string }) => e.ip)).toEqual(["10.2.0.1"]);
  });

  it("the change feed carries an entry's creation and deletion with the bridge's tenant", async () => {
    await http("POST", arp, entry);
    await http("DELETE", `${arp}/10.2.0.1_02-00-00-00-02-01`);
    const path = `${arp}/10.2.0.1_02-00-00-00-02-01`;
    const seen = () => fx.events.filter((e) => e.data["path"] === path);
    await waitFor("the entry's events", async () => seen().length >= 2, 5_000);
    expect(seen().map((e) => [e.subject.split(".").pop(), e.data["kind"], e.data["tenantId"]])).toEqual([
      ["created", "Ip4MacPair", "A"],
      ["deleted", "Ip4MacPair", "A"],
    ]);
  });
});

describe("deleting the bridge", () => {
  it("deletes its entries, each announced, and the table then answers 404", async () => {
    await http("POST", arp, { ip: "10.3.0.1", mac: "02:00:00:00:03:01" });
    await http("POST", arp, { ip: "10.3.0.2", mac: "02:00:00:00:03:02" });
    // A cached list of the table is dropped with the bridge.
    expect((await http("GET", arp)).json).toHaveLength(2);
    expect((await http("GET", arp)).json).toHaveLength(2);
    expect((await http("DELETE", `/bridges/${bridge}`)).status).toBe(204);
    expectError(await http("GET", arp), 404);
    expectError(await http("GET", `${arp}/10.3.0.1_02-00-00-00-03-01`), 404);
    expectError(await http("POST", arp, { ip: "10.3.0.3", mac: "02:00:00:00:03:03" }), 404);
    const deleted = () =>
      fx.events.filter((e) => String(e.data["path"]).startsWith(`${arp}/`) && e.subject.endsWith(".deleted")).map((e) => e.data["path"]);
    await waitFor("the entries' deletions", async () => deleted().length >= 2, 5_000);
    expect(deleted().sort()).toEqual([`${arp}/10.3.0.1_02-00-00-00-03-01`, `${arp}/10.3.0.2_02-00-00-00-03-02`]);
    // A bridge made again with the same id starts with an empty table.
    expect((await http("POST", "/bridges", { id: bridge, tenantId: "A" })).status).toBe(201);
    expect((await http("GET", arp)).json).toEqual([]);
  });
});
