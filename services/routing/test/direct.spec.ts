// The routing service reached directly over gRPC (no gateway): it checks its input and keeps
// its kinds to administrators without the gateway's help.
import * as grpc from "@grpc/grpc-js";
import { mirrorClearing } from "@vnm/kit";
import { DEPS, type DirectService, directService } from "@vnm/kit/testing";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

let svc: DirectService;
const ROUTER = "0000000a-0000-4000-8000-000000000001";

beforeAll(async () => {
  svc = await directService("routing");
  // Routes live on real routers; a Normal route's next hop is a port of its router.
  expect((await svc.call("vnm.routing.v1.RouterService", "CreateRouter", { router: { id: ROUTER } })).err).toBeNull();
  expect((await svc.call("vnm.routing.v1.PortService", "CreateRouterPort", { routerId: ROUTER, port: { id: "0000000b-0000-4000-8000-0000000000ff" } })).err).toBeNull();
});

afterAll(async () => {
  await svc.stop();
});

it("refuses a Normal route without its next hop, naming both fields", async () => {
  const r = await svc.call("vnm.routing.v1.RouteService", "CreateRoute", {
    routerId: ROUTER,
    route: { type: "Normal", dstNetworkAddr: "10.0.0.0", dstNetworkLength: 8, srcNetworkAddr: "0.0.0.0", srcNetworkLength: 0, weight: 1 },
  });
  expect(r.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
  expect(svc.violations(r).map((v) => v.property)).toEqual(["nextHopPort", "nextHopGateway"]);
});

it("a route on a router that does not exist is NOT_FOUND, whatever its body", async () => {
  const r = await svc.call("vnm.routing.v1.RouteService", "CreateRoute", { routerId: "0000000a-0000-4000-8000-0000000000ee", route: { type: "Nope" } });
  expect(r.err?.code).toBe(grpc.status.NOT_FOUND);
});

it("refuses a malformed ?port= filter, naming it", async () => {
  const r = await svc.call("vnm.routing.v1.L2InsertionService", "ListL2Insertions", { port: "nope" });
  expect(r.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
  expect(svc.violations(r)).toEqual([{ property: "port", message: "must be a valid UUID" }]);
});

it("serves administrators only", async () => {
  const tenantAdmin = svc.token({ role: "tenant_admin", tenantId: "acme" });
  expect((await svc.call("vnm.routing.v1.RouteService", "ListRouterRoutes", { routerId: ROUTER }, tenantAdmin)).err?.code).toBe(grpc.status.PERMISSION_DENIED);
  expect((await svc.call("vnm.routing.v1.L2InsertionService", "ListL2Insertions", {}, tenantAdmin)).err?.code).toBe(grpc.status.PERMISSION_DENIED);
});

describe("each field against routing.proto's rules, checked here without the gateway's help", () => {
  const route = (over: Record<string, unknown>) => ({
    routerId: ROUTER,
    route: { type: "Reject", dstNetworkAddr: "10.0.0.0", dstNetworkLength: 8, srcNetworkAddr: "0.0.0.0", srcNetworkLength: 0, weight: 1, ...over },
  });
  const insertion = (over: Record<string, unknown>) => ({
    l2Insertion: { mac: "02:AB:00:00:00:01", portId: "0000000C-0000-4000-8000-0000000000A1", srvPortId: "0000000c-0000-4000-8000-0000000000a2", position: 3, ...over },
  });

  it("a route: type in its list, addresses IPv4, lengths in [0, 32], weight not negative, a UUID next-hop port", async () => {
    const r = await svc.call("vnm.routing.v1.RouteService", "CreateRoute", route({ type: "Fip64", dstNetworkAddr: "10.1.0", srcNetworkAddr: "::1", dstNetworkLength: 33, srcNetworkLength: -1, weight: -1 }));
    expect(r.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(svc.violations(r)).toEqual([
      { property: "dstNetworkAddr", message: "must be a valid IPv4 address" },
      { property: "dstNetworkLength", message: "must be greater than or equal to 0 and less than or equal to 32" },
      { property: "srcNetworkAddr", message: "must be a valid IPv4 address" },
      { property: "srcNetworkLength", message: "must be greater than or equal to 0 and less than or equal to 32" },
      { property: "type", message: "must be in list [Normal, BlackHole, Reject, Local]" },
      { property: "weight", message: "must be greater than or equal to 0" },
    ]);
    const port = await svc.call("vnm.routing.v1.RouteService", "CreateRoute", route({ type: "Normal", nextHopPort: "port-1", nextHopGateway: "gw" }));
    expect(svc.violations(port)).toEqual([
      { property: "nextHopGateway", message: "must be a valid IPv4 address" },
      { property: "nextHopPort", message: "must be a valid UUID" },
    ]);
    const missing = await svc.call("vnm.routing.v1.RouteService", "CreateRoute", { routerId: ROUTER, route: { dstNetworkAddr: "10.0.0.0" } });
    expect(svc.violations(missing).map((v) => v.property)).toEqual(["dstNetworkLength", "srcNetworkAddr", "srcNetworkLength", "type", "weight"]);
    expect(svc.violations(missing)[0]?.message).toBe("value is required");
  });

  it("a route's next hop against its type: named, with its message, once every field is well formed", async () => {
    const r = await svc.call("vnm.routing.v1.RouteService", "CreateRoute", route({ type: "BlackHole", nextHopGateway: "10.0.0.1" }));
    expect(svc.violations(r)).toEqual([{ property: "nextHopGateway", message: "must not be set for a BlackHole route" }]);
    const ok = await svc.call("vnm.routing.v1.RouteService", "CreateRoute", route({ type: "Normal", nextHopGateway: "10.0.0.1", nextHopPort: "0000000B-0000-4000-8000-0000000000FF" }));
    expect(ok.err).toBeNull();
    expect(ok.res).toMatchObject({ type: "Normal", nextHopPort: "0000000b-0000-4000-8000-0000000000ff" });
  });

  it("an L2 insertion: a MAC, UUID ports, a position, a VLAN in [0, 4095]; MAC and ports kept in lower case", async () => {
    const r = await svc.call("vnm.routing.v1.L2InsertionService", "CreateL2Insertion", insertion({ mac: "02:ab:00:00:00", portId: "p", position: undefined, vlan: 4096 }));
    expect(r.err?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(svc.violations(r)).toEqual([
      { property: "mac", message: "must be six groups of two hex digits separated by ':', e.g. 02:00:00:00:00:01" },
      { property: "portId", message: "must be a valid UUID" },
      { property: "position", message: "value is required" },
      { property: "vlan", message: "must be greater than or equal to 0 and less than or equal to 4095" },
    ]);
    const ok = await svc.call("vnm.routing.v1.L2InsertionService", "CreateL2Insertion", insertion({}));
    expect(ok.err).toBeNull();
    expect(ok.res).toMatchObject({ mac: "02:ab:00:00:00:01", portId: "0000000c-0000-4000-8000-0000000000a1", failOpen: false, vlan: 0 });
  });

  it("an L2 insertion's service port is not its protected port, however the two ids are spelled", async () => {
    const r = await svc.call("vnm.routing.v1.L2InsertionService", "CreateL2Insertion", insertion({ portId: "0000000C-0000-4000-8000-0000000000B1", srvPortId: "0000000c-0000-4000-8000-0000000000b1" }));
    expect(svc.violations(r)).toEqual([{ property: "srvPortId", message: "must not be the protected port (portId)" }]);
  });

  it("?srv_port= is a UUID too, and a filter in capitals finds the insertion", async () => {
    const bad = await svc.call("vnm.routing.v1.L2InsertionService", "ListL2Insertions", { srv_port: "nope" });
    expect(svc.violations(bad)).toEqual([{ property: "srv_port", message: "must be a valid UUID" }]);
    const made = await svc.call("vnm.routing.v1.L2InsertionService", "CreateL2Insertion", insertion({ portId: "0000000c-0000-4000-8000-0000000000c1", srvPortId: "0000000c-0000-4000-8000-0000000000c2" }));
    expect(made.err).toBeNull();
    const found = await svc.call("vnm.routing.v1.L2InsertionService", "ListL2Insertions", { srv_port: "0000000C-0000-4000-8000-0000000000C2" });
    expect((found.res as { items: { id: string }[] }).items.map((i) => i.id)).toEqual([(made.res as { id: string }).id]);
  });
});

// A mirror deleted is taken out of routers' and ports' mirror lists (the policy service's
// deletion, PolicyReferences): found through the lists' indexes, which hold only the lists that
// name a mirror (migration "mirror lists' indexes hold only lists that name one").
it("finds the routers and ports naming a deleted mirror through the mirror lists' indexes, which hold only the lists that name one", async () => {
  const db = new pg.Client({ connectionString: DEPS.databaseUrl });
  await db.connect();
  try {
    await db.query(`SET search_path = "${svc.schema}"`);
    const mirror = "6d1f0b44-5b8c-4c53-9a43-2f4c8e1f7a11";
    await db.query("INSERT INTO routers (id) SELECT gen_random_uuid() FROM generate_series(1, 5000)");
    await db.query("INSERT INTO routers (id, inbound_mirror_ids) SELECT gen_random_uuid(), ARRAY[$1::uuid] FROM generate_series(1, 2)", [mirror]);
    await db.query(`INSERT INTO ports (id, type, device_id) SELECT gen_random_uuid(), 'Router', '${ROUTER}' FROM generate_series(1, 5000)`);
    await db.query(`INSERT INTO ports (id, type, device_id, outbound_mirror_ids) VALUES (gen_random_uuid(), 'Router', '${ROUTER}', ARRAY[$1::uuid])`, [mirror]);
    await db.query("ANALYZE routers");
    await db.query("ANALYZE ports");
    // The statements the deletion runs, planned as prepared ones are.
    await db.query("SET plan_cache_mode = force_generic_plan");
    for (const [table, changed] of [["routers", 2], ["ports", 1]] as const) {
      await db.query(`PREPARE clearing_${table}(uuid) AS ${mirrorClearing(table)}`);
      const plan = JSON.stringify((await db.query(`EXPLAIN (FORMAT JSON) EXECUTE clearing_${table}('${mirror}')`)).rows);
      expect(plan, table).toContain(`${table}_inbound_mirrors`);
      expect(plan, table).toContain(`${table}_outbound_mirrors`);
      expect(plan, table).not.toContain("Seq Scan");
      expect((await db.query(`EXECUTE clearing_${table}('${mirror}')`)).rowCount, table).toBe(changed);
    }
    // The indexes leave the empty lists out.
    const defs = await db.query("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname LIKE '%_mirrors' ORDER BY indexname", [svc.schema]);
    expect(defs.rows.map((r) => [r.indexname, /WHERE \((\w+) <> '\{\}'::uuid\[\]\)$/.exec(r.indexdef)?.[1]])).toEqual([
      ["ports_inbound_mirrors", "inbound_mirror_ids"],
      ["ports_outbound_mirrors", "outbound_mirror_ids"],
      ["routers_inbound_mirrors", "inbound_mirror_ids"],
      ["routers_outbound_mirrors", "outbound_mirror_ids"],
    ]);
  } finally {
    await db.end();
  }
});
