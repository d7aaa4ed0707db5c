// Migration 3 (routers, ports) on rows an earlier release wrote: every route stays, its router
// and its Normal next-hop port adopted, and the new foreign keys hold; the later migrations keep
// those rows (migration 9 gives each router empty mirror lists).
import pg from "pg";
import { DEPS, dropSchema } from "@vnm/kit/testing";
import { afterAll, expect, it } from "vitest";
import { migrate } from "../../kit/src/db.ts";
import { migrations } from "../src/migrations.ts";

const schema = `routing_migration_${process.pid}`;
const pool = new pg.Pool({ connectionString: DEPS.databaseUrl, max: 2 });

afterAll(async () => {
  await pool.end();
  await dropSchema(schema);
});

const R1 = "0000000a-0000-4000-8000-000000000001";
const R2 = "0000000a-0000-4000-8000-000000000002";
const P1 = "0000000b-0000-4000-8000-000000000001";

it("adopts the routers and next-hop ports of routes written before routers were served; nothing is lost", async () => {
  await migrate(pool, schema, migrations.filter((m) => m.version <= 2));

  const insert = `INSERT INTO ${schema}.routes (id, router_id, type, dst_network_addr, dst_network_length, src_network_addr, src_network_length, next_hop_gateway, next_hop_port, weight) VALUES ($1, $2, $3, '10.0.0.0', 8, '0.0.0.0', 0, $4, $5, 1)`;
  const old: [string, string, string, string | null, string | null][] = [
    ["0000000c-0000-4000-8000-000000000001", R1, "Normal", "10.0.0.1", P1],
    ["0000000c-0000-4000-8000-000000000002", R1, "BlackHole", null, null],
    ["0000000c-0000-4000-8000-000000000003", R2, "Reject", null, null],
    // The same next-hop port on another router: the port is the first route's router's.
    ["0000000c-0000-4000-8000-000000000004", R2, "Normal", "10.0.0.2", P1],
  ];
  for (const row of old) await pool.query(insert, row);
  await migrate(pool, schema, migrations);

  const routes = await pool.query(`SELECT id, router_id, next_hop_port FROM ${schema}.routes ORDER BY id`);
  expect(routes.rows.map((r) => [r.id, r.router_id, r.next_hop_port])).toEqual(old.map((r) => [r[0], r[1], r[4]]));
  const routers = await pool.query(`SELECT id, tenant_id, name, admin_state_up, as_number, inbound_mirror_ids, outbound_mirror_ids FROM ${schema}.routers ORDER BY seq`);
  expect(routers.rows).toEqual([
    { id: R1, tenant_id: null, name: "adopted: routes of an earlier release named this router", admin_state_up: true, as_number: 0, inbound_mirror_ids: [], outbound_mirror_ids: [] },
    { id: R2, tenant_id: null, name: "adopted: routes of an earlier release named this router", admin_state_up: true, as_number: 0, inbound_mirror_ids: [], outbound_mirror_ids: [] },
  ]);
  const ports = await pool.query(`SELECT id, type, device_id, router_id, port_address, peer_id FROM ${schema}.ports`);
  expect(ports.rows).toEqual([{ id: P1, type: "Router", device_id: R1, router_id: R1, port_address: null, peer_id: null }]);
  // The foreign keys hold from now on: no route to a router or a port that does not exist.
  await expect(pool.query(insert, ["0000000c-0000-4000-8000-000000000009", "0000000a-0000-4000-8000-0000000000ff", "Reject", null, null])).rejects.toThrow(/routes_router/);
  await expect(pool.query(insert, ["0000000c-0000-4000-8000-000000000009", R1, "Normal", "10.0.0.1", "0000000b-0000-4000-8000-0000000000ff"])).rejects.toThrow(/routes_next_hop_port/);
});
