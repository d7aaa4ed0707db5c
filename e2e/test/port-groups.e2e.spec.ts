// Port groups (PortGroup-v1) and their member ports (PortGroupPort-v1) end to end (topology
// spec §7, §9; docs/api.md, "Port groups"): tenancy as for routers, members that must be visible
// ports, the `?port_id=` filter, GET /ports/{id}/port_groups, and the memberships going, announced,
// with their group, their port and their port's bridge. Real processes, Postgres, NATS and Redis.
import { beforeAll, describe, expect, it } from "vitest";
import { expectError, expectServiceLossAndReturn, httpClient, useStack, waitFor } from "../harness/harness.ts";

const V = (name: string) => `application/vnd.org.service.${name}+json`;
const GONE = "00000000-0000-4000-8000-000000000000";
const PASSWORD = "port-groups-password-12";

const fx = useStack();
const http = httpClient(() => fx.gw, "application/json", () => fx.stack.adminToken);
const tokens: Record<string, string> = {};
const as = (who: string) => ({ "x-auth-token": tokens[who]! });

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

/** A new bridge of the tenant, by the admin. */
async function bridgeOf(tenantId: string): Promise<string> {
  const r = await http("POST", "/bridges", { name: "pg", tenantId });
  expect(r.status, r.text).toBe(201);
  return r.json.id;
}

/** A new port on a new (or the given) bridge of the tenant, by the admin. */
async function portOf(tenantId: string, bridge?: string): Promise<string> {
  const r = await http("POST", `/bridges/${bridge ?? (await bridgeOf(tenantId))}/ports`, {});
  expect(r.status, r.text).toBe(201);
  return r.json.id;
}

async function groupOf(tenantId: string, name = "g"): Promise<{ id: string; uri: string; ports: string }> {
  const r = await http("POST", "/port_groups", { name, tenantId });
  expect(r.status, r.text).toBe(201);
  return r.json;
}

const member = (g: { ports: string }, portId: string, headers: Record<string, string> = {}) => http("POST", g.ports, { portId }, headers);

describe("groups (PortGroup-v1)", () => {
  it("the root document names the collection and the item template", async () => {
    const root = (await http("GET", "/")).json;
    expect(root.portGroups).toBe(`${fx.gw}/port_groups`);
    expect(root.portGroupTemplate).toBe(`${fx.gw}/port_groups/{id}`);
  });

  it("create, list, get, replace and delete; stateful defaults to false", async () => {
    const c = await http("POST", "/port_groups", { name: "web", tenantId: "A" }, { "content-type": V("PortGroup-v1") });
    expect(c.status).toBe(201);
    expect(c.headers.get("content-type")).toBe(V("PortGroup-v1"));
    const uri = `${fx.gw}/port_groups/${c.json.id}`;
    expect(c.headers.get("location")).toBe(uri);
    expect(c.json).toEqual({ id: c.json.id, name: "web", tenantId: "A", stateful: false, uri, ports: `${uri}/ports` });
    const list = await http("GET", "/port_groups", undefined, { accept: V("collection.PortGroup-v1") });
    expect(list.headers.get("content-type")).toBe(V("collection.PortGroup-v1"));
    expect(list.json).toContainEqual(c.json);
    // Plain JSON as well as the vendor type (topology spec §7).
    const got = await http("GET", uri, undefined, { accept: "application/json" });
    expect(got.headers.get("content-type")).toBe("application/json");
    expect(got.json).toEqual(c.json);
    expect((await http("GET", uri, undefined, { accept: V("PortGroup-v1") })).json).toEqual(c.json);

    const u = await http("PUT", uri, { name: "web2", tenantId: "A", stateful: true });
    expect(u.status).toBe(200);
    expect(u.json).toMatchObject({ name: "web2", stateful: true });
    // PUT replaces: stateful left out returns to false.
    expect((await http("PUT", uri, { name: "web3", tenantId: "A" })).json).toMatchObject({ name: "web3", stateful: false });

    expect((await http("DELETE", uri)).status).toBe(204);
    expectError(await http("GET", uri), 404);
    expectError(await http("DELETE", uri), 404);
  });

  it.each([
    [{ name: "x".repeat(256) }, "name"],
    [{ stateful: "sometimes" }, "stateful"],
    [{ tenantId: "x".repeat(256) }, "tenantId"],
    [{ id: "nope" }, "id"],
  ])("%j is a 400 naming %s", async (body, property) => {
    const r = await http("POST", "/port_groups", body);
    expectError(r, 400);
    expect(r.json.violations.map((v: { property: string }) => v.property)).toEqual([property]);
  });

  it("a name of 0 or 255 characters, or none, is accepted", async () => {
    for (const name of ["", "x".repeat(255), undefined]) expect((await http("POST", "/port_groups", { name, tenantId: "A" })).status).toBe(201);
  });
});

describe("members (PortGroupPort-v1)", () => {
  it("add, list, get and remove; the port lists its memberships", async () => {
    const g = await groupOf("A");
    const p = await portOf("A");
    const c = await http("POST", g.ports, { portId: p.toUpperCase() }, { "content-type": V("PortGroupPort-v1") });
    expect(c.status, c.text).toBe(201);
    expect(c.headers.get("content-type")).toBe(V("PortGroupPort-v1"));
    const uri = `${g.uri}/ports/${p}`;
    expect(c.headers.get("location")).toBe(uri);
    expect(c.json).toEqual({ portId: p, portGroupId: g.id, uri, port: `${fx.gw}/ports/${p}`, portGroup: g.uri });
    const list = await http("GET", g.ports, undefined, { accept: V("collection.PortGroupPort-v1") });
    expect(list.headers.get("content-type")).toBe(V("collection.PortGroupPort-v1"));
    expect(list.json).toEqual([c.json]);
    expect((await http("GET", uri)).json).toEqual(c.json);
    // The port's portGroups link lists its memberships.
    const port = (await http("GET", `/ports/${p}`)).json;
    expect(port.portGroups).toBe(`${fx.gw}/ports/${p}/port_groups`);
    expect((await http("GET", port.portGroups, undefined, { accept: V("collection.PortGroupPort-v1") })).json).toEqual([c.json]);

    expect((await http("DELETE", uri)).status).toBe(204);
    expectError(await http("GET", uri), 404);
    expectError(await http("DELETE", uri), 404);
    expect((await http("GET", g.ports)).json).toEqual([]);
    expect((await http("GET", port.portGroups)).json).toEqual([]);
  });

  it("a port already a member is a 409 with the error body; the same port may join another group", async () => {
    const g = await groupOf("A");
    const p = await portOf("A");
    expect((await member(g, p)).status).toBe(201);
    const dup = await member(g, p);
    expectError(dup, 409);
    expect(dup.json.message).toContain(p);
    const h = await groupOf("A", "h");
    expect((await member(h, p)).status).toBe(201);
    expect((await http("GET", `/ports/${p}/port_groups`)).json.map((m: { portGroupId: string }) => m.portGroupId)).toEqual([g.id, h.id]);
  });

  it("20 parallel adds of one port yield one 201 and 19 409s", async () => {
    const g = await groupOf("A");
    const p = await portOf("A");
    const rs = await Promise.all(Array.from({ length: 20 }, () => member(g, p)));
    expect(rs.filter((r) => r.status === 201)).toHaveLength(1);
    expect(rs.filter((r) => r.status === 409)).toHaveLength(19);
  });

  it("a port that does not exist is a 404; a bad or missing portId a 400; a missing group a 404 first", async () => {
    const g = await groupOf("A");
    const missing = await member(g, GONE);
    expectError(missing, 404);
    expect(missing.json.message).toContain(GONE);
    for (const body of [{}, { portId: "nope" }, { portId: 5 }]) {
      const r = await http("POST", g.ports, body);
      expectError(r, 400);
      expect(r.json.violations.map((v: { property: string }) => v.property)).toEqual(["portId"]);
    }
    expect((await http("GET", g.ports)).json).toEqual([]);
    const gone = `/port_groups/${GONE}`;
    expectError(await http("POST", `${gone}/ports`, { portId: "nope" }), 404);
    expectError(await http("GET", `${gone}/ports`), 404);
    expectError(await http("GET", `${gone}/ports/${GONE}`), 404);
    expectError(await http("DELETE", `${gone}/ports/${GONE}`), 404);
    expectError(await http("GET", `/ports/${GONE}/port_groups`), 404);
    expectError(await http("GET", `${g.uri}/ports/not-a-uuid`), 404);
  });

  it("no PUT on a membership: 405 with Allow", async () => {
    const g = await groupOf("A");
    const p = await portOf("A");
    await member(g, p);
    const r = await http("PUT", `${g.uri}/ports/${p}`, { portId: p });
    expectError(r, 405);
    expect(r.headers.get("allow")).toBe("GET, DELETE");
  });
});

describe("?port_id= and ?tenant_id=", () => {
  it("?port_id= keeps the groups that port is a member of; a port in none gives []", async () => {
    const [g, h, k] = [await groupOf("A", "g"), await groupOf("A", "h"), await groupOf("A", "k")];
    const p = await portOf("A");
    await member(g, p);
    await member(k, p);
    await member(h, await portOf("A"));
    const ids = (r: { json: { id: string }[] }) => r.json.map((x) => x.id);
    expect(ids(await http("GET", `/port_groups?port_id=${p}`))).toEqual([g.id, k.id]);
    // Paged with limit and marker.
    const first = await http("GET", `/port_groups?port_id=${p}&limit=1`);
    expect(ids(first)).toEqual([g.id]);
    expect(first.headers.get("link")).toContain("rel=\"next\"");
    expect(ids(await http("GET", `/port_groups?port_id=${p}&limit=1&marker=${g.id}`))).toEqual([k.id]);
    expect((await http("GET", `/port_groups?port_id=${await portOf("A")}`)).json).toEqual([]);
    expect((await http("GET", `/port_groups?port_id=${GONE}`)).json).toEqual([]);
    const bad = await http("GET", "/port_groups?port_id=nope");
    expectError(bad, 400);
    expect(bad.json.violations.map((v: { property: string }) => v.property)).toEqual(["port_id"]);
    // With the tenant filter and a field filter too.
    expect(ids(await http("GET", `/port_groups?port_id=${p}&tenant_id=A&name=k`))).toEqual([k.id]);
    expect((await http("GET", `/port_groups?port_id=${p}&tenant_id=B`)).json).toEqual([]);
  });

  it("a ?port_id= list read twice (cached) shows a membership added, removed, and its port deleted, at once", async () => {
    const g = await groupOf("A");
    const p = await portOf("A");
    const byPort = async () => (await http("GET", `/port_groups?port_id=${p}`)).json.map((x: { id: string }) => x.id);
    expect(await byPort()).toEqual([]);
    expect(await byPort()).toEqual([]);
    await member(g, p);
    expect(await byPort()).toEqual([g.id]);
    expect(await byPort()).toEqual([g.id]);
    expect((await http("DELETE", `${g.uri}/ports/${p}`)).status).toBe(204);
    expect(await byPort()).toEqual([]);
    await member(g, p);
    expect(await byPort()).toEqual([g.id]);
    expect((await http("DELETE", `/ports/${p}`)).status).toBe(204);
    expect(await byPort()).toEqual([]);
  });

  it("?tenant_id= keeps that tenant's groups", async () => {
    const a = await groupOf("A");
    const b = await groupOf("B");
    const ofA = (await http("GET", "/port_groups?tenant_id=A")).json.map((x: { id: string }) => x.id);
    expect(ofA).toContain(a.id);
    expect(ofA).not.toContain(b.id);
  });
});

describe("memberships go with their port, their group and their port's bridge, announced", () => {
  const deletedMembers = (path: string) =>
    fx.events.filter((e) => e.data["kind"] === "PortGroupPort" && e.subject.endsWith(".deleted") && e.data["path"] === path);

  it("deleting a port removes it from its groups", async () => {
    const g = await groupOf("A");
    const p = await portOf("A");
    await member(g, p);
    expect((await http("GET", g.ports)).json).toHaveLength(1);
    expect((await http("GET", g.ports)).json).toHaveLength(1);
    expect((await http("DELETE", `/ports/${p}`)).status).toBe(204);
    expect((await http("GET", g.ports)).json).toEqual([]);
    expectError(await http("GET", `${g.uri}/ports/${p}`), 404);
    expectError(await http("GET", `/ports/${p}/port_groups`), 404);
    expect((await http("GET", `/port_groups?port_id=${p}`)).json).toEqual([]);
    const path = `/port_groups/${g.id}/ports/${p}`;
    await waitFor("the membership's deletion", async () => deletedMembers(path).length > 0, 5_000);
    expect(deletedMembers(path)[0]!.data).toMatchObject({ tenantId: "A" });
  });

  it("deleting a group clears it from its ports", async () => {
    const g = await groupOf("A");
    const p = await portOf("A");
    await member(g, p);
    expect((await http("GET", `/ports/${p}/port_groups`)).json).toHaveLength(1);
    expect((await http("GET", `/ports/${p}/port_groups`)).json).toHaveLength(1);
    expect((await http("DELETE", g.uri)).status).toBe(204);
    expect((await http("GET", `/ports/${p}/port_groups`)).json).toEqual([]);
    expectError(await http("GET", g.ports), 404);
    expect((await http("GET", `/ports/${p}`)).status).toBe(200);
    const path = `/port_groups/${g.id}/ports/${p}`;
    await waitFor("the membership's deletion", async () => deletedMembers(path).length > 0, 5_000);
  });

  it("deleting a router takes its ports out of their groups at once", async () => {
    const router = (await http("POST", "/routers", { name: "pg", tenantId: "A" })).json;
    const rp = await http("POST", `/routers/${router.id}/ports`, { portAddress: "10.5.0.1", networkAddress: "10.5.0.0", networkLength: 24 });
    expect(rp.status, rp.text).toBe(201);
    const g = await groupOf("A");
    await member(g, rp.json.id);
    expect((await http("DELETE", `/routers/${router.id}`)).status).toBe(204);
    expect((await http("GET", g.ports)).json).toEqual([]);
    expect((await http("GET", `/port_groups?port_id=${rp.json.id}`)).json).toEqual([]);
    await waitFor("announced", async () => deletedMembers(`/port_groups/${g.id}/ports/${rp.json.id}`).length > 0, 5_000);
  });

  it("deleting a bridge takes its ports out of their groups (within 10 s of the 204)", async () => {
    const b = await bridgeOf("A");
    const [p, q] = [await portOf("A", b), await portOf("A", b)];
    const g = await groupOf("A");
    await member(g, p);
    await member(g, q);
    const keep = await portOf("A");
    await member(g, keep);
    expect((await http("DELETE", `/bridges/${b}`)).status).toBe(204);
    await waitFor("the bridge's ports out of the group", async () => (await http("GET", g.ports)).json.length === 1, 10_000);
    expect((await http("GET", g.ports)).json.map((m: { portId: string }) => m.portId)).toEqual([keep]);
    for (const x of [p, q]) await waitFor("announced", async () => deletedMembers(`/port_groups/${g.id}/ports/${x}`).length > 0, 5_000);
  });
});

describe("tenancy (topology spec §9): as for routers", () => {
  it("a tenant admin's group takes its tenant; naming another tenant is a 403; a tenant user only reads", async () => {
    const c = await http("POST", "/port_groups", { name: "mine" }, as("taA"));
    expect(c.status, c.text).toBe(201);
    expect(c.json.tenantId).toBe("A");
    expectError(await http("POST", "/port_groups", { name: "theirs", tenantId: "B" }, as("taA")), 403);
    expect((await http("GET", c.json.uri, undefined, as("tuA"))).status).toBe(200);
    expectError(await http("POST", "/port_groups", { name: "x" }, as("tuA")), 403);
    expectError(await http("PUT", c.json.uri, { name: "x" }, as("tuA")), 403);
    const p = await portOf("A");
    expect((await member(c.json, p, as("taA"))).status).toBe(201);
    expectError(await member(c.json, await portOf("A"), as("tuA")), 403);
    expectError(await http("DELETE", `${c.json.uri}/ports/${p}`, undefined, as("tuA")), 403);
    expect((await http("GET", `/ports/${p}/port_groups`, undefined, as("tuA"))).json).toHaveLength(1);
    expect((await http("DELETE", `${c.json.uri}/ports/${p}`, undefined, as("taA"))).status).toBe(204);
  });

  it("another tenant's group and its members answer 404 on every method, naming nothing of it; lists leave it out", async () => {
    const g = await groupOf("A");
    const p = await portOf("A");
    await member(g, p);
    const calls: [string, string, unknown?][] = [
      ["GET", g.uri],
      ["PUT", g.uri, { name: "mine now" }],
      ["DELETE", g.uri],
      ["GET", g.ports],
      ["POST", g.ports, { portId: await portOf("B") }],
      ["GET", `${g.uri}/ports/${p}`],
      ["DELETE", `${g.uri}/ports/${p}`],
      ["GET", `/ports/${p}/port_groups`],
    ];
    for (const [method, path, body] of calls) {
      const r = await http(method, path, body, as("taB"));
      expectError(r, 404);
      expect(r.text).not.toContain('"A"');
    }
    const listed = (await http("GET", "/port_groups", undefined, as("taB"))).json.map((x: { id: string }) => x.id);
    expect(listed).not.toContain(g.id);
    expect((await http("GET", "/port_groups?tenant_id=A", undefined, as("taB"))).json).toEqual([]);
    expect((await http("GET", `/port_groups?port_id=${p}`, undefined, as("taB"))).json).toEqual([]);
    expect((await http("GET", g.ports)).json.map((m: { portId: string }) => m.portId)).toEqual([p]);
  });

  it("a port of another tenant cannot join: 404, as a port that does not exist", async () => {
    const g = await http("POST", "/port_groups", { name: "a" }, as("taA"));
    const theirs = await portOf("B");
    const r = await member(g.json, theirs, as("taA"));
    expectError(r, 404);
    const none = await member(g.json, GONE, as("taA"));
    expect(r.json.message.replace(theirs, "<id>")).toBe(none.json.message.replace(GONE, "<id>"));
    expect((await http("GET", g.json.ports)).json).toEqual([]);
  });
});

describe("the routing service lost", () => {
  it("/port_groups answers 503 naming it while the rest of the API works, and serves again once it is back", async () => {
    await expectServiceLossAndReturn(fx, "routing", "/port_groups");
  });
});
