// Authentication, users and tenant isolation (docs/api.md, "Authentication" and "Tenancy"), end to end through
// the gateway with real processes, Postgres, NATS and Redis.
import { randomBytes } from "node:crypto";
import { request as httpRequest } from "node:http";
import pg from "pg";
import { generateKeyPairSync } from "node:crypto";
import { accessRules, buildCatalog } from "@vnm/kit";
import { identityTokens } from "@vnm/kit/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEPS, expectError, type HttpResult, httpClient, Stack, waitFor } from "@vnm/e2e/harness";
import { OvsdbServer } from "@vnm/e2e/ovsdb-server";

const stack = new Stack();
let gw = "";
const http = httpClient(() => gw, "application/json", () => stack.adminToken);
const as = (token: string) => ({ "x-auth-token": token });
const basic = (name: string, password: string) => `Basic ${Buffer.from(`${name}:${password}`).toString("base64")}`;

const TENANT_A = `A-${stack.id}`;
const TENANT_B = `B-${stack.id}`;
const PASSWORD = "correct horse battery";
type Who = "admin" | "taA" | "tuA" | "taB" | "none" | "bad";
const tokens: Record<Who, string> = { admin: "", taA: "", tuA: "", taB: "", none: "", bad: "v1.forged.token" };
/** Every body answered to tenant B, to check none holds tenant A's data. */
const seenByB: string[] = [];

async function req(who: Who, method: string, path: string, body?: unknown): Promise<HttpResult> {
  const r = await http(method, path, body, as(tokens[who]));
  if (who === "taB") seenByB.push(r.text, JSON.stringify([...r.headers]));
  return r;
}

beforeAll(async () => {
  await stack.startServices();
  // The matrix asks as the administrator over a thousand times within seconds (every kind, every
  // method), past the default per-user limit (1,000 per 10 s); the limit's own tests are below.
  gw = await stack.startGateway({ VNM_RATE_LIMIT: "100000" });
  tokens.admin = stack.adminToken;
  const users: [Who, string, string][] = [
    ["taA", "tenant_admin", TENANT_A],
    ["tuA", "tenant_user", TENANT_A],
    ["taB", "tenant_admin", TENANT_B],
  ];
  for (const [who, role, tenantId] of users) {
    const r = await http("POST", "/users", { name: `${who}-${stack.id}`, password: PASSWORD, tenantId, roles: [role] });
    expect(r.status).toBe(201);
    tokens[who] = await stack.login(gw, `${who}-${stack.id}`, PASSWORD);
  }
});

afterAll(async () => {
  await stack.stop();
});

describe("POST /login", () => {
  it("answers a Token-v1 body, the same token in X-Auth-Token (and no cookie to a browser-like client); it expires", async () => {
    // fetch() sends Sec-Fetch-Mode, as browsers do.
    const r = await fetch(`${gw}/login`, { method: "POST", headers: { authorization: basic(`taA-${stack.id}`, PASSWORD) } });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("application/vnd.org.service.Token-v1+json");
    const body = (await r.json()) as { key: string; expires: string };
    expect(r.headers.get("x-auth-token")).toBe(body.key);
    expect(r.headers.get("set-cookie")).toBeNull();
    const ttl = Date.parse(body.expires) - Date.now();
    expect(ttl).toBeGreaterThan(3500_000);
    expect(ttl).toBeLessThanOrEqual(3600_000);
    // The token works with either header.
    expect((await http("GET", "/bridges", undefined, as(body.key))).status).toBe(200);
    expect((await http("GET", "/bridges", undefined, { authorization: `Bearer ${body.key}` })).status).toBe(200);
  });

  it("gives a client that is no browser (MidoNet's python client reads it) the token in an HttpOnly, SameSite=Strict sessionId cookie too; a browser never", async () => {
    // node:http sends only what it is given, as httplib2 does: no Origin, no Sec-Fetch-*.
    const plain = (headers: Record<string, string>) =>
      new Promise<{ status: number; cookie: string[] | undefined; key: string }>((resolve, reject) => {
        const req = httpRequest(`${gw}/login`, { method: "POST", headers: { authorization: basic(`taA-${stack.id}`, PASSWORD), ...headers } }, (res) => {
          let text = "";
          res.on("data", (c: Buffer) => (text += c.toString()));
          res.on("end", () => resolve({ status: res.statusCode ?? 0, cookie: res.headers["set-cookie"], key: text ? (JSON.parse(text) as { key: string }).key : "" }));
        });
        req.on("error", reject);
        req.end();
      });
    const client = await plain({});
    expect(client.status).toBe(200);
    expect(client.cookie).toHaveLength(1);
    const [pair, ...attributes] = client.cookie![0]!.split("; ");
    expect(pair).toBe(`sessionId=${client.key}`);
    expect(attributes).toEqual(expect.arrayContaining(["Path=/", "HttpOnly", "SameSite=Strict"]));
    expect(attributes.some((a) => a.startsWith("Expires="))).toBe(true);
    const browsers: Record<string, string>[] = [{ origin: gw }, { "sec-fetch-mode": "cors" }, { "sec-fetch-site": "same-origin" }];
    for (const browser of browsers) {
      const r = await plain(browser);
      expect(r.status).toBe(200);
      expect(r.cookie).toBeUndefined();
    }
  });

  it.each([
    ["no credentials", {}],
    ["a wrong password", { authorization: basic("admin", "wrong-password") }],
    ["an unknown user", { authorization: basic("nobody", PASSWORD) }],
    ["not Basic", { authorization: "Digest x" }],
    ["garbage", { authorization: "Basic !!!" }],
  ])("%s is a 401 with WWW-Authenticate", async (_what, headers: Record<string, string>) => {
    const r = await http("POST", "/login", undefined, { "x-auth-token": "", ...headers });
    expectError(r, 401);
    expect(r.headers.get("www-authenticate")).toMatch(/^Basic realm=/);
  });

  it("X-Auth-Project names the tenant: an admin acts in it, a member of another tenant is refused", async () => {
    const adminInA = await stack.login(gw, "admin", stack.adminPassword, TENANT_A);
    const b = await http("POST", "/bridges", { name: "admin in A" }, as(adminInA));
    expect(b.json.tenantId).toBe(TENANT_A);
    const plain = await http("POST", "/bridges", { name: "admin nowhere" });
    expect(plain.json.tenantId).toBeNull();
    const r = await fetch(`${gw}/login`, {
      method: "POST",
      headers: { authorization: basic(`taA-${stack.id}`, PASSWORD), "x-auth-project": TENANT_B },
    });
    expect(r.status).toBe(401);
  });

  it("only POST: another method is a 405", async () => {
    const r = await http("GET", "/login", undefined, { authorization: basic("admin", stack.adminPassword) });
    expectError(r, 405);
    expect(r.headers.get("allow")).toBe("POST");
  });
});

describe("tokens", () => {
  it.each([
    ["missing", ""],
    ["forged", "v1.e30.AAAA"],
    ["signed with another key", "OTHER"],
    ["expired", "EXPIRED"],
  ])("a %s token is a 401 with WWW-Authenticate", async (_what, token) => {
    const sign = await identityTokens(stack.schema("identity"));
    const t =
      token === "EXPIRED"
        ? sign({ exp: Math.floor(Date.now() / 1000) - 1 })
        : token === "OTHER"
          ? sign({}, generateKeyPairSync("ed25519").privateKey)
          : token;
    for (const path of ["/", "/bridges", "/users"]) {
      const r = await http("GET", path, undefined, as(t));
      expectError(r, 401);
      expect(r.headers.get("www-authenticate")).toBeTruthy();
    }
  });

  it("/healthz, /readyz and /metrics need no token and show no tenant data", async () => {
    for (const p of ["/healthz", "/readyz", "/metrics"]) {
      const r = await http("GET", p, undefined, { "x-auth-token": "" });
      expect(r.status, p).toBe(200);
      expect(r.text).not.toContain(TENANT_A);
    }
  });
});

describe("users (admin only)", () => {
  it("create, list, get, replace, delete; the password is never returned and stored only hashed", async () => {
    const name = `carol-${stack.id}`;
    const c = await http("POST", "/users", { name, password: "s3cret-passw0rd", tenantId: TENANT_A, roles: ["tenant_user"] }, {
      "content-type": "application/vnd.org.service.User-v1+json",
    });
    expect(c.status).toBe(201);
    expect(c.headers.get("location")).toBe(`${gw}/users/${c.json.id}`);
    expect(c.json).toEqual({ id: c.json.id, name, tenantId: TENANT_A, roles: ["tenant_user"], uri: `${gw}/users/${c.json.id}` });
    expect(c.text).not.toContain("s3cret");
    const list = await http("GET", "/users");
    expect(list.json.some((u: { id: string }) => u.id === c.json.id)).toBe(true);
    expect(list.text).not.toContain("password");

    const db = new pg.Client({ connectionString: DEPS.databaseUrl });
    await db.connect();
    const stored = (await db.query(`SELECT password_hash FROM ${stack.schema("identity")}.users WHERE id = $1`, [c.json.id])).rows[0];
    await db.end();
    expect(stored.password_hash).toMatch(/^scrypt\$/);
    expect(stored.password_hash).not.toContain("s3cret");

    // PUT without a password keeps it; with one, changes it.
    const u = await http("PUT", c.json.uri, { name, tenantId: TENANT_A, roles: ["tenant_admin"] });
    expect(u.json.roles).toEqual(["tenant_admin"]);
    expect(await stack.login(gw, name, "s3cret-passw0rd")).toBeTruthy();
    await http("PUT", c.json.uri, { name, tenantId: TENANT_A, roles: ["tenant_admin"], password: "another-passw0rd" });
    await expect(stack.login(gw, name, "s3cret-passw0rd")).rejects.toThrow(/401/);
    expect(await stack.login(gw, name, "another-passw0rd")).toBeTruthy();

    expect((await http("DELETE", c.json.uri)).status).toBe(204);
    await expect(stack.login(gw, name, "another-passw0rd")).rejects.toThrow(/401/);
  });

  it("names and ids are unique (409, saying which); roles, tenant and password are checked (400)", async () => {
    const byName = await http("POST", "/users", { name: `taA-${stack.id}`, password: PASSWORD, tenantId: "x", roles: ["tenant_user"] });
    expectError(byName, 409);
    expect(byName.json.message).toContain("named");
    const first = await http("POST", "/users", { name: `fred-${stack.id}`, password: PASSWORD, tenantId: "x", roles: ["tenant_user"] });
    const byId = await http("POST", "/users", { id: first.json.id, name: `fred2-${stack.id}`, password: PASSWORD, tenantId: "x", roles: ["tenant_user"] });
    expectError(byId, 409);
    expect(byId.json.message).toContain(first.json.id);
    const bad: [Record<string, unknown>, string][] = [
      [{ name: "u1", password: PASSWORD, tenantId: "t", roles: ["king"] }, "roles"],
      [{ name: "u1", password: PASSWORD, tenantId: "t", roles: [] }, "roles"],
      [{ name: "u1", password: PASSWORD, roles: ["tenant_user"] }, "tenantId"],
      [{ name: "u1", password: "short", tenantId: "t", roles: ["tenant_user"] }, "password"],
      [{ name: "u1", tenantId: "t", roles: ["tenant_user"] }, "password"],
      [{ name: "a:b", password: PASSWORD, tenantId: "t", roles: ["tenant_user"] }, "name"],
      [{ password: PASSWORD, tenantId: "t", roles: ["tenant_user"] }, "name"],
    ];
    for (const [body, property] of bad) {
      const r = await http("POST", "/users", body);
      expectError(r, 400);
      expect(r.json.violations.map((v: { property: string }) => v.property), JSON.stringify(body)).toContain(property);
    }
  });
});

describe("the role x method matrix", () => {
  /** A's resources, made by the admin; each case gets fresh ones where it deletes. */
  async function makeTree(tenant: string) {
    const b = (await http("POST", "/bridges", { name: "tree", tenantId: tenant })).json;
    await http("POST", `/bridges/${b.id}/dhcp`, { subnetPrefix: "10.0.0.0", subnetLength: 24 });
    await http("POST", `/bridges/${b.id}/dhcp/10.0.0.0_24/hosts`, { macAddr: "02:00:00:00:00:01", ipAddr: "10.0.0.5", name: "h" });
    await http("POST", `/bridges/${b.id}/dhcpV6`, { prefix: "2001:db8::", prefixLength: 64 });
    const port = "11111111-2222-4333-8444-555555555555";
    await http("POST", `/bridges/${b.id}/mac_table`, { macAddr: "02:00:00:00:00:09", portId: port });
    await http("POST", `/bridges/${b.id}/arp_table`, { ip: "10.0.0.9", mac: "02:00:00:00:00:09" });
    // A port group with a port of the bridge as its member, and another port to add.
    const pg = (await http("POST", "/port_groups", { name: "tree", tenantId: tenant })).json;
    const [memberPort, sparePort] = [(await http("POST", `/bridges/${b.id}/ports`, {})).json, (await http("POST", `/bridges/${b.id}/ports`, {})).json];
    await http("POST", `/port_groups/${pg.id}/ports`, { portId: memberPort.id });
    const qos = (await http("POST", "/qos_policies", { name: "tree", tenantId: tenant })).json;
    const bw = (await http("POST", `/qos_policies/${qos.id}/qos_bw_limit_rules`, { maxKbps: 100 })).json;
    const dscp = (await http("POST", `/qos_policies/${qos.id}/qos_dscp_rules`, { dscpMark: 10 })).json;
    // A router with a port; a port of the bridge (a port's tenant is its device's).
    const router = (await http("POST", "/routers", { name: "tree", tenantId: tenant })).json;
    const routerPort = (await http("POST", `/routers/${router.id}/ports`, { portAddress: "10.5.0.1", networkLength: 24 })).json;
    const bridgePort = (await http("POST", `/bridges/${b.id}/ports`, { vlanId: 5 })).json;
    return {
      id: b.id as string,
      bridge: `/bridges/${b.id}`,
      subnet: `/bridges/${b.id}/dhcp/10.0.0.0_24`,
      host: `/bridges/${b.id}/dhcp/10.0.0.0_24/hosts/02:00:00:00:00:01`,
      subnet6: `/bridges/${b.id}/dhcpV6/2001:db8::_64`,
      mac: `/bridges/${b.id}/mac_table/02-00-00-00-00-09_${port}`,
      arp: `/bridges/${b.id}/arp_table/10.0.0.9_02-00-00-00-00-09`,
      portGroup: `/port_groups/${pg.id}`,
      member: `/port_groups/${pg.id}/ports/${memberPort.id}`,
      sparePort: sparePort.id as string,
      qos: `/qos_policies/${qos.id}`,
      bw: `/qos_bw_limit_rules/${bw.id}`,
      dscp: `/qos_dscp_rules/${dscp.id}`,
      router: `/routers/${router.id}`,
      routerPort: `/ports/${routerPort.id}`,
      bridgePort: `/ports/${bridgePort.id}`,
    };
  }

  type Tree = Awaited<ReturnType<typeof makeTree>>;
  interface Kind {
    name: string;
    list: (t: Tree) => string;
    item: (t: Tree) => string;
    post: (t: Tree) => [string, unknown];
    put?: (t: Tree) => unknown;
  }
  const kinds: Kind[] = [
    {
      name: "Bridge",
      list: () => "/bridges",
      item: (t) => t.bridge,
      post: () => ["/bridges", { name: "new", tenantId: TENANT_A }],
      put: () => ({ name: "renamed", tenantId: TENANT_A }),
    },
    {
      name: "DhcpSubnet",
      list: (t) => `${t.bridge}/dhcp`,
      item: (t) => t.subnet,
      post: (t) => [`${t.bridge}/dhcp`, { subnetPrefix: "10.1.0.0", subnetLength: 24 }],
      put: () => ({ subnetPrefix: "10.0.0.0", subnetLength: 24, interfaceMTU: 1400 }),
    },
    {
      name: "DhcpHost",
      list: (t) => `${t.subnet}/hosts`,
      item: (t) => t.host,
      post: (t) => [`${t.subnet}/hosts`, { macAddr: "02:00:00:00:00:02", ipAddr: "10.0.0.6", name: "h2" }],
      put: () => ({ macAddr: "02:00:00:00:00:01", ipAddr: "10.0.0.7", name: "h" }),
    },
    {
      name: "DhcpV6Subnet",
      list: (t) => `${t.bridge}/dhcpV6`,
      item: (t) => t.subnet6,
      post: (t) => [`${t.bridge}/dhcpV6`, { prefix: "2001:db9::", prefixLength: 64 }],
      put: () => ({ prefix: "2001:db8::", prefixLength: 64 }),
    },
    {
      name: "MacPort",
      list: (t) => `${t.bridge}/mac_table`,
      item: (t) => t.mac,
      post: (t) => [`${t.bridge}/mac_table`, { macAddr: "02:00:00:00:00:0a", portId: "11111111-2222-4333-8444-555555555555" }],
    },
    {
      name: "Ip4MacPair",
      list: (t) => `${t.bridge}/arp_table`,
      item: (t) => t.arp,
      post: (t) => [`${t.bridge}/arp_table`, { ip: "10.0.0.10", mac: "02:00:00:00:00:0a" }],
    },
    {
      name: "PortGroup",
      list: () => "/port_groups",
      item: (t) => t.portGroup,
      post: () => ["/port_groups", { name: "new", tenantId: TENANT_A }],
      put: () => ({ name: "renamed", tenantId: TENANT_A }),
    },
    {
      name: "PortGroupPort",
      list: (t) => `${t.portGroup}/ports`,
      item: (t) => t.member,
      post: (t) => [`${t.portGroup}/ports`, { portId: t.sparePort }],
    },
    // A QoS policy's rules follow the policy's tenant (listed and created under it).
    {
      name: "QosBwLimitRule",
      list: (t) => `${t.qos}/qos_bw_limit_rules`,
      item: (t) => t.bw,
      post: (t) => [`${t.qos}/qos_bw_limit_rules`, { maxKbps: 5 }],
      put: () => ({ maxKbps: 7, maxBurstKb: 1 }),
    },
    {
      name: "QosDscpRule",
      list: (t) => `${t.qos}/qos_dscp_rules`,
      item: (t) => t.dscp,
      post: (t) => [`${t.qos}/qos_dscp_rules`, { dscpMark: 5 }],
      put: () => ({ dscpMark: 7 }),
    },
    {
      name: "Router",
      list: () => "/routers",
      item: (t) => t.router,
      post: () => ["/routers", { name: "new", tenantId: TENANT_A }],
      put: () => ({ name: "renamed", tenantId: TENANT_A }),
    },
    // Ports follow their device's tenant (listed and created under it).
    {
      name: "RouterPort",
      list: (t) => `${t.router}/ports`,
      item: (t) => t.routerPort,
      post: (t) => [`${t.router}/ports`, { portAddress: "10.5.1.1", networkLength: 24 }],
      put: () => ({ adminStateUp: false }),
    },
    {
      name: "BridgePort",
      list: (t) => `${t.bridge}/ports`,
      item: (t) => t.bridgePort,
      post: (t) => [`${t.bridge}/ports`, { vlanId: 6 }],
      put: () => ({ vlanId: 7 }),
    },
  ];

  //                         admin taA  tuA  taB  none bad
  const expected: Record<string, [number, number, number, number, number, number]> = {
    list: [200, 200, 200, 200, 401, 401],
    item: [200, 200, 200, 404, 401, 401],
    post: [201, 201, 403, 404, 401, 401],
    put: [200, 200, 403, 404, 401, 401],
    delete: [204, 204, 403, 404, 401, 401],
  };
  const whos: Who[] = ["admin", "taA", "tuA", "taB", "none", "bad"];
  /** Kinds with a tenant of their own (not a parent's): B lists them (without A's), and B naming A in a POST is a 403. */
  const TOP_LEVEL = new Set(["Bridge", "PortGroup", "Router"]);

  for (const kind of kinds) {
    for (const op of ["list", "item", "post", "put", "delete"] as const) {
      if (op === "put" && !kind.put) continue;
      it(`${kind.name} ${op}: ${whos.map((w, i) => `${w} ${expected[op]![i]}`).join(", ")}`, async () => {
        for (const [i, who] of whos.entries()) {
          const t = await makeTree(TENANT_A);
          let want = expected[op]![i]!;
          // Posting a top-level bridge has no parent to hide: B is refused for naming tenant A.
          if (TOP_LEVEL.has(kind.name) && op === "post" && who === "taB") want = 403;
          // A child list under A's bridge is hidden from B like the bridge itself.
          if (!TOP_LEVEL.has(kind.name) && op === "list" && who === "taB") want = 404;
          let r: HttpResult;
          if (op === "list") r = await req(who, "GET", kind.list(t));
          else if (op === "item") r = await req(who, "GET", kind.item(t));
          else if (op === "post") r = await req(who, "POST", ...kind.post(t));
          else if (op === "put") r = await req(who, "PUT", kind.item(t), kind.put!(t));
          else r = await req(who, "DELETE", kind.item(t));
          expect(r.status, `${who} ${op} ${kind.name}: ${r.text}`).toBe(want);
          if (want >= 400) expectError(r, want);
          if (op === "list" && want === 200 && kind.name === "Bridge") {
            const tenants = new Set(r.json.map((b: { tenantId: string }) => b.tenantId));
            if (who === "taA" || who === "tuA") expect([...tenants]).toEqual([TENANT_A]);
            if (who === "taB") expect(tenants.has(TENANT_A)).toBe(false);
          }
        }
      });
    }
  }

  it("User: every method is admin only (403 for tenant roles, 401 without a valid token)", async () => {
    const u = await http("POST", "/users", { name: `dave-${stack.id}`, password: PASSWORD, tenantId: TENANT_A, roles: ["tenant_user"] });
    const body = { name: `dave-${stack.id}`, password: PASSWORD, tenantId: TENANT_A, roles: ["tenant_admin"] };
    const ops: [string, string, unknown?][] = [
      ["GET", "/users"],
      ["GET", `/users/${u.json.id}`],
      ["POST", "/users", { ...body, name: `eve-${stack.id}` }],
      ["PUT", `/users/${u.json.id}`, body],
      ["DELETE", `/users/${u.json.id}`],
    ];
    for (const [method, path, b] of ops) {
      for (const who of ["taA", "tuA", "taB"] as Who[]) expectError(await req(who, method, path, b), 403);
      for (const who of ["none", "bad"] as Who[]) expectError(await req(who, method, path, b), 401);
    }
    expect((await req("admin", "DELETE", `/users/${u.json.id}`)).status).toBe(204);
  });

  it("LoadBalancer, Pool, HealthMonitor, PoolMember, VIP: admin only (no tenant field), every method", async () => {
    const lb = (await http("POST", "/load_balancers", {})).json;
    const hm = (await http("POST", "/health_monitors", { type: "TCP" })).json;
    const pool = (await http("POST", "/pools", { loadBalancerId: lb.id, lbMethod: "ROUND_ROBIN" })).json;
    const member = (await http("POST", "/pool_members", { poolId: pool.id, address: "10.0.0.1" })).json;
    const vip = (await http("POST", "/vips", { poolId: pool.id, address: "10.0.0.2" })).json;
    const kinds: [string, string, unknown][] = [
      ["/load_balancers", lb.uri, {}],
      ["/pools", pool.uri, { loadBalancerId: lb.id, lbMethod: "ROUND_ROBIN" }],
      ["/health_monitors", hm.uri, { type: "TCP" }],
      ["/pool_members", member.uri, { poolId: pool.id, address: "10.0.0.1" }],
      ["/vips", vip.uri, { poolId: pool.id, address: "10.0.0.2" }],
    ];
    for (const [list, item, body] of kinds) {
      const ops: [string, string, unknown?][] = [
        ["GET", list],
        ["GET", item],
        ["POST", list, body],
        ["PUT", item, body],
        ["DELETE", item],
      ];
      for (const [method, path, b] of ops) {
        for (const who of ["taA", "tuA", "taB"] as Who[]) expectError(await req(who, method, path, b), 403);
        for (const who of ["none", "bad"] as Who[]) expectError(await req(who, method, path, b), 401);
      }
    }
    for (const [, item] of [...kinds].reverse()) expect((await req("admin", "DELETE", item)).status).toBe(204);
  });

  it("VtepBinding: admin only, whatever the bridge's tenant, every method (a real binding on a device)", async () => {
    const device = await OvsdbServer.create();
    try {
      device.ctl("add-ps", "sw-auth");
      device.ctl("set", "Physical_Switch", "sw-auth", "management_ips=127.0.0.1");
      device.ctl("add-port", "sw-auth", "eth0");
      const zone = (await http("POST", "/tunnel_zones", { name: `auth-${stack.id}`, type: "vtep" })).json;
      const vtep = (await http("POST", "/vteps", { managementIp: "127.0.0.1", managementPort: device.port, tunnelZoneId: zone.id })).json;
      await waitFor("the device's port", async () => (await http("GET", `${vtep.uri}/ports`)).json.length === 1, 15_000);
      const own = (await req("taA", "POST", "/bridges", { name: "bound" })).json;
      const binding = await http("POST", vtep.bindings, { portName: "eth0", vlanId: 1, networkId: own.id });
      expect(binding.status).toBe(201);
      const body = { portName: "eth0", vlanId: 2, networkId: own.id };
      const ops: [string, string, unknown?][] = [
        ["GET", vtep.bindings],
        ["GET", binding.json.uri],
        ["POST", vtep.bindings, body],
        ["DELETE", binding.json.uri],
      ];
      // A binding has no PUT, for anyone (405 before who asks is judged).
      expectError(await req("taA", "PUT", binding.json.uri, body), 405);
      for (const [method, path, b] of ops) {
        for (const who of ["taA", "tuA", "taB"] as Who[]) expectError(await req(who, method, path, b), 403);
        for (const who of ["none", "bad"] as Who[]) expectError(await req(who, method, path, b), 401);
      }
      expect((await http("GET", vtep.bindings)).json).toEqual([binding.json]);
      expect((await http("DELETE", binding.json.uri)).status).toBe(204);
      await waitFor("the bridge's VXLAN port gone", async () => (await http("GET", own.uri)).json.vxlanPortIds.length === 0, 10_000);
      expect((await http("DELETE", own.uri)).status).toBe(204);
      expect((await http("DELETE", vtep.uri)).status).toBe(204);
    } finally {
      await device.destroy();
    }
  });

  it("a non-admin POST without tenantId takes the caller's tenant; naming another is a 403", async () => {
    const r = await req("taB", "POST", "/bridges", { name: "mine" });
    expect(r.status).toBe(201);
    expect(r.json.tenantId).toBe(TENANT_B);
    expectError(await req("taB", "PUT", r.json.uri, { name: "steal", tenantId: TENANT_A }), 403);
    // A PUT that leaves tenantId out keeps the caller's tenant.
    const kept = await req("taB", "PUT", r.json.uri, { name: "kept" });
    expect(kept.json.tenantId).toBe(TENANT_B);
  });

  it("?tenant_id= naming another tenant answers a non-admin 200 with []", async () => {
    await makeTree(TENANT_A);
    const r = await req("taB", "GET", `/bridges?tenant_id=${TENANT_A}`);
    expect(r.status).toBe(200);
    expect(r.json).toEqual([]);
    const own = await req("taA", "GET", `/bridges?tenant_id=${TENANT_A}`);
    expect(own.json.length).toBeGreaterThan(0);
  });

  it("a cached list is never served across tenants", async () => {
    await makeTree(TENANT_A);
    const a1 = await req("taA", "GET", "/bridges");
    await req("taA", "GET", "/bridges"); // cached now
    const b1 = await req("taB", "GET", "/bridges");
    expect(a1.json.length).toBeGreaterThan(0);
    for (const bridge of a1.json) expect(b1.text).not.toContain(bridge.id);
  });

  it("a bridge handed to another tenant takes its cached child lists with it", async () => {
    const t = await makeTree(TENANT_A);
    expect((await req("taA", "GET", `${t.bridge}/dhcp`)).status).toBe(200);
    expect((await req("taA", "GET", `${t.bridge}/dhcp`)).status).toBe(200); // cached now
    expect((await http("PUT", t.bridge, { name: "moved", tenantId: TENANT_B })).status).toBe(200);
    expectError(await req("taA", "GET", `${t.bridge}/dhcp`), 404);
    expect((await req("taB", "GET", `${t.bridge}/dhcp`)).json).toHaveLength(1);
  });

  it("no response to tenant B ever held tenant A's data", () => {
    expect(seenByB.length).toBeGreaterThan(20);
    for (const text of seenByB) expect(text).not.toContain(TENANT_A);
  });
});

describe("rate limit", () => {
  it("holds across two gateway replicas sharing Redis: 429 with Retry-After past it", async () => {
    const env = { VNM_RATE_LIMIT: "20", VNM_RATE_WINDOW_SECONDS: "3600" };
    const one = await stack.startGateway(env);
    const two = await stack.startGateway(env);
    const token = await stack.login(one, `taA-${stack.id}`, PASSWORD);
    const statuses: number[] = [];
    let retryAfter: string | null = null;
    for (let i = 0; i < 15; i++) {
      for (const base of [one, two]) {
        const r = await http("GET", `${base}/bridges`, undefined, as(token));
        statuses.push(r.status);
        if (r.status === 429) {
          expectError(r, 429);
          retryAfter = r.headers.get("retry-after");
        }
      }
    }
    // 30 requests, 20 allowed in all: both replicas count into one limit.
    expect(statuses.filter((s) => s === 200)).toHaveLength(20);
    expect(statuses.filter((s) => s === 429)).toHaveLength(10);
    expect(Number(retryAfter)).toBeGreaterThan(0);
    // Another token has its own allowance.
    expect((await http("GET", `${one}/bridges`, undefined, as(tokens.taB))).status).toBe(200);
  });

  it("repeated bad passwords for one user are refused with 429, even the right one", async () => {
    // The identity service counts password checks: a replica of it with a limit of 5, behind a gateway of its own.
    const identity = await stack.startReplica("identity", { VNM_LOGIN_FAILURE_LIMIT: "5" });
    const one = await stack.startGateway({ VNM_IDENTITY_ADDR: identity });
    const name = `target-${randomBytes(3).toString("hex")}`;
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) {
      statuses.push((await http("POST", `${one}/login`, undefined, { authorization: basic(name, "guess") })).status);
    }
    expect(statuses.slice(0, 5)).toEqual([401, 401, 401, 401, 401]);
    expect(statuses.slice(5)).toEqual([429, 429, 429]);
    // Logins that succeed do not count: a user logging in often is not locked out.
    for (let i = 0; i < 8; i++) expect(await stack.login(one, `taA-${stack.id}`, PASSWORD)).toBeTruthy();
  });
});

describe("admin-only kinds, from the catalog", () => {
  it("every route of a kind with no tenant of its own or above it refuses non-admins with 403", async () => {
    const catalog = buildCatalog();
    const rules = accessRules(catalog);
    const adminOnly = catalog.routes.filter((r) => rules.get(`${r.service}/${r.rpc}`)?.adminOnly);
    expect(adminOnly.length).toBeGreaterThan(0);
    const wrong: string[] = [];
    for (const r of adminOnly) {
      const path = r.template.replace(/\{[^}]+\}/g, "00000000-0000-4000-8000-000000000001");
      for (const who of ["taA", "tuA"] as const) {
        const res = await req(who, r.method, path, r.bodyField ? {} : undefined);
        if (res.status !== 403 || typeof res.json?.message !== "string") wrong.push(`${who} ${r.method} ${path} -> ${res.status}`);
      }
    }
    expect(wrong).toEqual([]);
  });
});

describe("no existence oracle in paging", () => {
  it("another tenant's item as a marker is as unknown as no item at all (400 naming marker)", async () => {
    const ofA = (await req("taA", "POST", "/bridges", { name: "paged" })).json;
    const ownNext = await req("taA", "GET", `/bridges?limit=1&marker=${ofA.id}`);
    expect(ownNext.status).toBe(200);
    const foreign = await req("taB", "GET", `/bridges?limit=1&marker=${ofA.id}`);
    const unknown = await req("taB", "GET", "/bridges?limit=1&marker=00000000-0000-4000-8000-00000000dead");
    for (const r of [foreign, unknown]) {
      expectError(r, 400);
      expect(r.json.violations).toEqual([{ property: "marker", message: "must be the id of an item of this list" }]);
    }
  });
});
