// "Not yours" answers exactly like "not there" (docs/api.md, "Tenancy"): another tenant's
// resource, asked for by id, as a parent, as a paging marker or as a filter, gets the answer a
// made-up id gets (same status, same message but for the id), so a tenant cannot learn which
// ids exist elsewhere. Every setup step and every answer's status is asserted, so a failed setup
// (or a token the gateway refuses) fails the suite instead of comparing two equal refusals.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type HttpResult, httpClient, Stack } from "../harness/harness.ts";

const stack = new Stack();
let gw = "";
const http = httpClient(() => gw, "application/json", () => stack.adminToken);
const PASSWORD = "long enough pass phrase 42";
const TENANT_A = `A-${stack.id}`;
const TENANT_B = `B-${stack.id}`;
const GHOST = "0f0e0d0c-0b0a-4908-8706-050403020100";
const ids: Record<string, string> = {};
let tokenB = "";

beforeAll(async () => {
  await stack.startServices("identity", "bridge", "qos", "lb", "routing", "policy");
  gw = await stack.startGateway({}, false);
  const admin = { "x-auth-token": stack.adminToken };
  const made = async (path: string, body: unknown) => {
    const r = await http("POST", path, body, admin);
    expect(r.status, `${path}: ${r.text}`).toBe(201);
    return (r.json as { id: string }).id;
  };
  ids["bridge"] = await made("/bridges", { name: "a-bridge", tenantId: TENANT_A });
  await made(`/bridges/${ids["bridge"]}/dhcp`, { subnetPrefix: "10.1.0.0", subnetLength: 24 });
  ids["qos"] = await made("/qos_policies", { name: "a-policy", tenantId: TENANT_A });
  ids["portGroup"] = await made("/port_groups", { name: "a-group", tenantId: TENANT_A });
  ids["router"] = await made("/routers", { name: "a-router", tenantId: TENANT_A });
  ids["port"] = await made(`/routers/${ids["router"]}/ports`, { portAddress: "10.3.0.1", networkLength: 24 });
  ids["bridgePort"] = await made(`/bridges/${ids["bridge"]}/ports`, {});
  ids["chain"] = await made("/chains", { name: "a-chain", tenantId: TENANT_A });
  ids["rule"] = await made(`/chains/${ids["chain"]}/rules`, { type: "accept" });
  // Load balancers have no tenant field (admin-only); a tenantId sent is ignored.
  ids["lb"] = await made("/load_balancers", { adminStateUp: true });
  const user = await http("POST", "/users", { name: `b-${stack.id}`, password: PASSWORD, tenantId: TENANT_B, roles: ["tenant_admin"] }, admin);
  expect(user.status, user.text).toBe(201);
  tokenB = await stack.login(gw, `b-${stack.id}`, PASSWORD);
  // B's own router and port, to link to A's.
  const asB = { "x-auth-token": tokenB };
  const routerB = await http("POST", "/routers", { name: "b-router" }, asB);
  expect(routerB.status, routerB.text).toBe(201);
  const portB = await http("POST", `/routers/${routerB.json.id}/ports`, {}, asB);
  expect(portB.status, portB.text).toBe(201);
  ids["portB"] = portB.json.id;
});

afterAll(async () => {
  await stack.stop();
});

/** Status and message, with the id asked for written as <id>. */
function shapeOf(r: HttpResult, id: string): { status: number; message: unknown } {
  const body = r.json as { message?: string } | undefined;
  return { status: r.status, message: body?.message?.replaceAll(id, "<id>") };
}

/** B asking for A's id gets `status`, exactly as B asking for an id nobody has. */
async function sameAnswer(status: number, method: string, path: (id: string) => string, realId: string, body?: unknown): Promise<void> {
  expect(realId, `an id for ${path("<id>")}`).toMatch(/^[0-9a-f-]{36}$/);
  const asB = { "x-auth-token": tokenB };
  const theirs = await http(method, path(realId), body, asB);
  const none = await http(method, path(GHOST), body, asB);
  expect(theirs.status, `${method} ${path("<id>")}: ${theirs.text}`).toBe(status);
  expect(shapeOf(theirs, realId), `${method} ${path("<id>")}`).toEqual(shapeOf(none, GHOST));
  expect(theirs.text.includes(TENANT_A)).toBe(false);
}

describe("another tenant's resource answers like one that does not exist", () => {
  it("items: GET, PUT, DELETE", async () => {
    for (const [kind, path] of [
      ["bridge", (id: string) => `/bridges/${id}`],
      ["qos", (id: string) => `/qos_policies/${id}`],
      ["portGroup", (id: string) => `/port_groups/${id}`],
      ["router", (id: string) => `/routers/${id}`],
      ["port", (id: string) => `/ports/${id}`],
      ["bridgePort", (id: string) => `/ports/${id}`],
    ] as const) {
      await sameAnswer(404, "GET", path, ids[kind]!);
      await sameAnswer(404, "PUT", path, ids[kind]!, { name: "mine now", tenantId: TENANT_B });
      await sameAnswer(404, "DELETE", path, ids[kind]!);
    }
    // An admin-only kind refuses a tenant admin before looking: 403 whether the item exists or not.
    await sameAnswer(403, "GET", (id) => `/load_balancers/${id}`, ids["lb"]!);
  });

  it("parents: children listed and created under another tenant's bridge", async () => {
    await sameAnswer(404, "GET", (id) => `/bridges/${id}/dhcp`, ids["bridge"]!);
    await sameAnswer(404, "POST", (id) => `/bridges/${id}/dhcp`, ids["bridge"]!, { subnetPrefix: "10.2.0.0", subnetLength: 24 });
    await sameAnswer(404, "GET", (id) => `/bridges/${id}/mac_table`, ids["bridge"]!);
    await sameAnswer(404, "GET", (id) => `/port_groups/${id}/ports`, ids["portGroup"]!);
    await sameAnswer(404, "POST", (id) => `/port_groups/${id}/ports`, ids["portGroup"]!, { portId: GHOST });
    for (const device of ["routers", "bridges"]) {
      const id = ids[device === "routers" ? "router" : "bridge"]!;
      await sameAnswer(404, "GET", (x) => `/${device}/${x}/ports`, id);
      await sameAnswer(404, "POST", (x) => `/${device}/${x}/ports`, id, {});
      await sameAnswer(404, "GET", (x) => `/${device}/${x}/peer_ports`, id);
    }
  });

  it("chains and rules: the chain, its rule list, a rule into it, a rule of it, and the chain as a jump's target", async () => {
    await sameAnswer(404, "GET", (id) => `/chains/${id}`, ids["chain"]!);
    await sameAnswer(404, "DELETE", (id) => `/chains/${id}`, ids["chain"]!);
    await sameAnswer(404, "GET", (id) => `/chains/${id}/rules`, ids["chain"]!);
    await sameAnswer(404, "POST", (id) => `/chains/${id}/rules`, ids["chain"]!, { type: "accept" });
    await sameAnswer(404, "GET", (id) => `/rules/${id}`, ids["rule"]!);
    await sameAnswer(404, "DELETE", (id) => `/rules/${id}`, ids["rule"]!);
    const asB = { "x-auth-token": tokenB };
    const own = await http("POST", "/chains", { name: "b-chain" }, asB);
    expect(own.status, own.text).toBe(201);
    const jumpNone = await http("POST", `/chains/${own.json.id}/rules`, { type: "jump", jumpChainId: GHOST }, asB);
    const jumpTheirs = await http("POST", `/chains/${own.json.id}/rules`, { type: "jump", jumpChainId: ids["chain"] }, asB);
    expect(jumpTheirs.status, jumpTheirs.text).toBe(404);
    expect(shapeOf(jumpTheirs, ids["chain"]!)).toEqual(shapeOf(jumpNone, GHOST));
    expect((await http("GET", `/chains/${own.json.id}/rules`, undefined, asB)).json).toEqual([]);
  });

  it("links: another tenant's port, as the port linked or as its peer", async () => {
    await sameAnswer(404, "POST", (id) => `/ports/${id}/link`, ids["port"]!, { peerId: ids["portB"] });
    await sameAnswer(404, "DELETE", (id) => `/ports/${id}/link`, ids["port"]!);
    const asB = { "x-auth-token": tokenB };
    const theirs = await http("POST", `/ports/${ids["portB"]}/link`, { peerId: ids["port"] }, asB);
    const none = await http("POST", `/ports/${ids["portB"]}/link`, { peerId: GHOST }, asB);
    expect(theirs.status, theirs.text).toBe(404);
    expect(shapeOf(theirs, ids["port"]!)).toEqual(shapeOf(none, GHOST));
    expect(theirs.text.includes(TENANT_A)).toBe(false);
    const port = await http("GET", `/ports/${ids["port"]}`, undefined, { "x-auth-token": stack.adminToken });
    expect(port.json.peerId).toBeNull();
  });

  it("paging markers and tenant filters", async () => {
    await sameAnswer(400, "GET", (id) => `/bridges?limit=5&marker=${id}`, ids["bridge"]!);
    await sameAnswer(400, "GET", (id) => `/qos_policies?limit=5&marker=${id}`, ids["qos"]!);
    await sameAnswer(400, "GET", (id) => `/chains?limit=5&marker=${id}`, ids["chain"]!);
    await sameAnswer(400, "GET", (id) => `/routers?limit=5&marker=${id}`, ids["router"]!);
    await sameAnswer(400, "GET", (id) => `/ports?limit=5&marker=${id}`, ids["port"]!);
    const asB = { "x-auth-token": tokenB };
    const other = await http("GET", `/bridges?tenant_id=${encodeURIComponent(TENANT_A)}`, undefined, asB);
    const nobody = await http("GET", "/bridges?tenant_id=no-such-tenant", undefined, asB);
    expect([other.status, other.json]).toEqual([200, []]);
    expect([nobody.status, nobody.text]).toEqual([other.status, other.text]);
  });

  it("the original still exists and is unchanged (nothing B did reached it)", async () => {
    const r = await http("GET", `/bridges/${ids["bridge"]}`, undefined, { "x-auth-token": stack.adminToken });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ name: "a-bridge", tenantId: TENANT_A });
  });
});
