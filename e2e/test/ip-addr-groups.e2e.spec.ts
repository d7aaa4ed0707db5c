// IP address groups (IpAddrGroup-v1) and their addresses (IpAddrGroupAddr-v1) end to end
// (topology spec §8, §9; docs/api.md, "IP address groups"): administrators only. Real processes,
// Postgres, NATS and Redis.
import { beforeAll, describe, expect, it } from "vitest";
import { expectError, expectServiceLossAndReturn, httpClient, useStack, waitFor } from "../harness/harness.ts";

const V = (name: string) => `application/vnd.org.service.${name}+json`;
const GONE = "00000000-0000-4000-8000-000000000000";
const PASSWORD = "ip-addr-groups-password-12";

const fx = useStack();
const http = httpClient(() => fx.gw, "application/json", () => fx.stack.adminToken);
let tenantAdmin = "";

beforeAll(async () => {
  const name = `ta-${fx.stack.id}`;
  const r = await http("POST", "/users", { name, password: PASSWORD, tenantId: "A", roles: ["tenant_admin"] });
  expect(r.status, r.text).toBe(201);
  tenantAdmin = await fx.stack.login(fx.gw, name, PASSWORD);
});

const group = async (name = "g") => {
  const r = await http("POST", "/ip_addr_groups", { name });
  expect(r.status, r.text).toBe(201);
  return r.json as { id: string; uri: string; addrs: string };
};

describe("groups (IpAddrGroup-v1)", () => {
  it("the root document names the collection and the item template", async () => {
    const root = (await http("GET", "/")).json;
    expect(root.ipAddrGroups).toBe(`${fx.gw}/ip_addr_groups`);
    expect(root.ipAddrGroupTemplate).toBe(`${fx.gw}/ip_addr_groups/{id}`);
  });

  it("create, list, get and delete", async () => {
    const c = await http("POST", "/ip_addr_groups", { name: "web servers" }, { "content-type": V("IpAddrGroup-v1") });
    expect(c.status).toBe(201);
    expect(c.headers.get("content-type")).toBe(V("IpAddrGroup-v1"));
    const uri = `${fx.gw}/ip_addr_groups/${c.json.id}`;
    expect(c.headers.get("location")).toBe(uri);
    expect(c.json).toEqual({ id: c.json.id, name: "web servers", uri, addrs: `${uri}/ip_addrs` });
    const list = await http("GET", "/ip_addr_groups", undefined, { accept: V("collection.IpAddrGroup-v1") });
    expect(list.headers.get("content-type")).toBe(V("collection.IpAddrGroup-v1"));
    expect(list.json).toContainEqual(c.json);
    expect((await http("GET", uri, undefined, { accept: V("IpAddrGroup-v1") })).json).toEqual(c.json);
    expect((await http("GET", c.json.addrs)).json).toEqual([]);
    expect((await http("DELETE", uri)).status).toBe(204);
    expectError(await http("GET", uri), 404);
    expectError(await http("DELETE", uri), 404);
    expect((await http("GET", "/ip_addr_groups")).json.map((g: { id: string }) => g.id)).not.toContain(c.json.id);
  });

  it("an id may be given; one taken is a 409", async () => {
    const id = "6b6d7d4e-1111-4000-8000-0000000000a1";
    expect((await http("POST", "/ip_addr_groups", { id, name: "mine" })).json.id).toBe(id);
    expectError(await http("POST", "/ip_addr_groups", { id, name: "again" }), 409);
  });

  it.each([
    [{}, "name"],
    [{ name: "" }, "name"],
    [{ name: "x".repeat(256) }, "name"],
    [{ name: 5 }, "name"],
    [{ name: "ok", id: "not-a-uuid" }, "id"],
  ])("%j is a 400 naming %s", async (body, property) => {
    const r = await http("POST", "/ip_addr_groups", body);
    expectError(r, 400);
    expect(r.json.violations.map((v: { property: string }) => v.property)).toEqual([property]);
  });

  it("a name of 255 characters is accepted", async () => {
    expect((await http("POST", "/ip_addr_groups", { name: "x".repeat(255) })).status).toBe(201);
  });

  it("no PUT: 405 with Allow", async () => {
    const g = await group();
    const r = await http("PUT", g.uri, { name: "renamed" });
    expectError(r, 405);
    expect(r.headers.get("allow")).toBe("GET, DELETE");
    expect((await http("GET", g.uri)).json.name).toBe("g");
  });
});

describe("addresses (IpAddrGroupAddr-v1)", () => {
  it("an IPv4 address: create, list, get, delete; its uri is <group uri>/versions/4/ip_addrs/<addr>", async () => {
    const g = await group();
    const c = await http("POST", g.addrs, { version: 4, addr: "10.0.0.1" }, { "content-type": V("IpAddrGroupAddr-v1") });
    expect(c.status).toBe(201);
    expect(c.headers.get("content-type")).toBe(V("IpAddrGroupAddr-v1"));
    const uri = `${g.uri}/versions/4/ip_addrs/10.0.0.1`;
    expect(c.headers.get("location")).toBe(uri);
    expect(c.json).toEqual({ addr: "10.0.0.1", version: 4, ipAddrGroupId: g.id, uri, ipAddrGroup: g.uri });
    const list = await http("GET", g.addrs, undefined, { accept: V("collection.IpAddrGroupAddr-v1") });
    expect(list.headers.get("content-type")).toBe(V("collection.IpAddrGroupAddr-v1"));
    expect(list.json).toEqual([c.json]);
    expect((await http("GET", uri)).json).toEqual(c.json);
    expect((await http("DELETE", uri)).status).toBe(204);
    expectError(await http("GET", uri), 404);
    expect((await http("GET", g.addrs)).json).toEqual([]);
  });

  it("an IPv6 address is kept in RFC 5952 form and found by any spelling, percent-encoded or not", async () => {
    const g = await group();
    const c = await http("POST", g.addrs, { version: 6, addr: "2001:0DB8:0000:0000:0000:0000:0000:0001" });
    expect(c.status).toBe(201);
    expect(c.json.addr).toBe("2001:db8::1");
    const uri = `${g.uri}/versions/6/ip_addrs/2001:db8::1`;
    expect(c.json.uri).toBe(uri);
    expect(c.headers.get("location")).toBe(uri);
    for (const spelling of ["2001:db8::1", "2001%3Adb8%3A%3A1", "2001:DB8:0:0::1", "2001%3A0db8%3A0%3A0%3A0%3A0%3A0%3A1"]) {
      const r = await http("GET", `${g.uri}/versions/6/ip_addrs/${spelling}`);
      expect(r.status, spelling).toBe(200);
      expect(r.json).toEqual(c.json);
    }
    // Another spelling of the same address is the same address.
    expectError(await http("POST", g.addrs, { version: 6, addr: "2001:db8:0::1" }), 409);
    // The address under the other version names nothing.
    expectError(await http("GET", `${g.uri}/versions/4/ip_addrs/2001:db8::1`), 404);
    expect((await http("DELETE", `${g.uri}/versions/6/ip_addrs/2001%3Adb8%3A%3A1`)).status).toBe(204);
    expect((await http("GET", g.addrs)).json).toEqual([]);
  });

  it("a group holds an address once (409 with the error body); another group may hold it too", async () => {
    const g = await group();
    expect((await http("POST", g.addrs, { version: 4, addr: "10.0.0.1" })).status).toBe(201);
    const dup = await http("POST", g.addrs, { version: 4, addr: "10.0.0.1" });
    expectError(dup, 409);
    expect(dup.json.message).toContain("10.0.0.1");
    expect((await http("POST", g.addrs, { version: "4", addr: "10.0.0.2" })).status).toBe(201);
    const other = await group("other");
    expect((await http("POST", other.addrs, { version: 4, addr: "10.0.0.1" })).status).toBe(201);
    expect((await http("GET", g.addrs)).json.map((a: { addr: string }) => a.addr)).toEqual(["10.0.0.1", "10.0.0.2"]);
  });

  it("20 parallel creates of one address yield one 201 and 19 409s", async () => {
    const g = await group();
    const rs = await Promise.all(Array.from({ length: 20 }, () => http("POST", g.addrs, { version: 6, addr: "fd00::9" })));
    expect(rs.filter((r) => r.status === 201)).toHaveLength(1);
    expect(rs.filter((r) => r.status === 409)).toHaveLength(19);
  });

  it.each([
    [{ version: 4 }, "addr"],
    [{ addr: "10.0.0.1" }, "version"],
    [{ version: 4, addr: "10.0.0.256" }, "addr"],
    [{ version: 4, addr: "nonsense" }, "addr"],
    [{ version: 6, addr: "abcd::1234::" }, "addr"],
    [{ version: 6, addr: "fe80::1%eth0" }, "addr"],
    [{ version: 5, addr: "10.0.0.1" }, "version"],
    [{ version: 0, addr: "10.0.0.1" }, "version"],
    [{ version: "four", addr: "10.0.0.1" }, "version"],
    [{ version: 6, addr: "10.0.0.1" }, "version"],
    [{ version: 4, addr: "2001:db8::1" }, "version"],
  ])("%j is a 400 naming %s, and nothing is written", async (body, property) => {
    const g = await group();
    const r = await http("POST", g.addrs, body);
    expectError(r, 400);
    expect(r.json.violations.map((v: { property: string }) => v.property)).toEqual([property]);
    expect((await http("GET", g.addrs)).json).toEqual([]);
  });

  it("in the item path, a version other than 4 or 6, or an address that does not parse, is a 400; an absent address a 404", async () => {
    const g = await group();
    await http("POST", g.addrs, { version: 4, addr: "10.0.0.1" });
    for (const method of ["GET", "DELETE"]) {
      const v5 = await http(method, `${g.uri}/versions/5/ip_addrs/10.0.0.1`);
      expectError(v5, 400);
      expect(v5.json.violations.map((v: { property: string }) => v.property)).toEqual(["version"]);
      const bad = await http(method, `${g.uri}/versions/4/ip_addrs/10.0.0.300`);
      expectError(bad, 400);
      expect(bad.json.violations.map((v: { property: string }) => v.property)).toEqual(["addr"]);
      // DELETE of an absent address: 404 (MidoNet: 204).
      expectError(await http(method, `${g.uri}/versions/4/ip_addrs/10.0.0.9`), 404);
    }
    expectError(await http("GET", `${g.uri}/versions/four/ip_addrs/10.0.0.1`), 404);
    expect((await http("GET", g.addrs)).json.map((a: { addr: string }) => a.addr)).toEqual(["10.0.0.1"]);
  });

  it("a missing group is a 404 on every method, before the body or the path's address is judged", async () => {
    const gone = `/ip_addr_groups/${GONE}`;
    expectError(await http("GET", `${gone}/ip_addrs`), 404);
    expectError(await http("POST", `${gone}/ip_addrs`, { version: 4, addr: "10.0.0.1" }), 404);
    expectError(await http("POST", `${gone}/ip_addrs`, { version: 9, addr: "x" }), 404);
    expectError(await http("GET", `${gone}/versions/4/ip_addrs/10.0.0.1`), 404);
    expectError(await http("DELETE", `${gone}/versions/5/ip_addrs/nonsense`), 404);
  });

  it("no PUT on an address: 405 with Allow", async () => {
    const g = await group();
    await http("POST", g.addrs, { version: 4, addr: "10.0.0.1" });
    const r = await http("PUT", `${g.uri}/versions/4/ip_addrs/10.0.0.1`, { version: 4, addr: "10.0.0.2" });
    expectError(r, 405);
    expect(r.headers.get("allow")).toBe("GET, DELETE");
  });

  it("deleting a group deletes its addresses, each announced, and its list then answers 404", async () => {
    const g = await group();
    await http("POST", g.addrs, { version: 4, addr: "10.0.0.1" });
    await http("POST", g.addrs, { version: 6, addr: "fd00::1" });
    expect((await http("GET", g.addrs)).json).toHaveLength(2);
    expect((await http("GET", g.addrs)).json).toHaveLength(2);
    expect((await http("DELETE", g.uri)).status).toBe(204);
    expectError(await http("GET", g.addrs), 404);
    expectError(await http("GET", `${g.uri}/versions/4/ip_addrs/10.0.0.1`), 404);
    const path = `/ip_addr_groups/${g.id}`;
    const deleted = () => fx.events.filter((e) => String(e.data["path"]).startsWith(path) && e.subject.endsWith(".deleted")).map((e) => [e.data["kind"], e.data["path"]]);
    await waitFor("the deletions", async () => deleted().length >= 3, 5_000);
    expect(deleted().sort()).toEqual([
      ["IpAddrGroup", path],
      ["IpAddrGroupAddr", `${path}/versions/4/ip_addrs/10.0.0.1`],
      ["IpAddrGroupAddr", `${path}/versions/6/ip_addrs/fd00::1`],
    ]);
  });
});

describe("administrators only (topology spec §9)", () => {
  it("a tenant's admin gets 403 on every method of groups and addresses, and changes nothing", async () => {
    const g = await group();
    await http("POST", g.addrs, { version: 4, addr: "10.0.0.1" });
    const as = { "x-auth-token": tenantAdmin };
    const calls: [string, string, unknown?][] = [
      ["GET", "/ip_addr_groups"],
      ["POST", "/ip_addr_groups", { name: "mine" }],
      ["GET", g.uri],
      ["DELETE", g.uri],
      ["GET", g.addrs],
      ["POST", g.addrs, { version: 4, addr: "10.0.0.2" }],
      ["GET", `${g.uri}/versions/4/ip_addrs/10.0.0.1`],
      ["DELETE", `${g.uri}/versions/4/ip_addrs/10.0.0.1`],
      ["GET", `/ip_addr_groups/${GONE}`],
    ];
    for (const [method, path, body] of calls) expectError(await http(method, path, body, as), 403);
    expect((await http("GET", g.addrs)).json.map((a: { addr: string }) => a.addr)).toEqual(["10.0.0.1"]);
  });
});

describe("the routing service lost", () => {
  it("/ip_addr_groups answers 503 naming it while the rest of the API works, and serves again once it is back", async () => {
    await expectServiceLossAndReturn(fx, "routing", "/ip_addr_groups");
  });
});
