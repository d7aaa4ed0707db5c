import type { Migration } from "@vnm/kit";

export const migrations: Migration[] = [
  {
    version: 1,
    name: "routes and l2 insertions",
    sql: `
      CREATE TABLE routes (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL UNIQUE,
        router_id uuid NOT NULL,
        type text NOT NULL,
        dst_network_addr text NOT NULL,
        dst_network_length integer NOT NULL,
        src_network_addr text NOT NULL,
        src_network_length integer NOT NULL,
        next_hop_gateway text,
        next_hop_port uuid,
        weight integer NOT NULL
      );
      CREATE INDEX routes_router_seq ON routes (router_id, seq);

      CREATE TABLE l2_insertions (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL UNIQUE,
        port_id uuid NOT NULL,
        srv_port_id uuid NOT NULL,
        mac text NOT NULL,
        position integer NOT NULL,
        fail_open boolean NOT NULL,
        vlan integer NOT NULL,
        -- One insertion per protected port and service port, whoever writes at the same time.
        CONSTRAINT l2_insertions_pair UNIQUE (port_id, srv_port_id)
      );
      CREATE INDEX l2_insertions_order ON l2_insertions (position, port_id, srv_port_id, seq);
      CREATE INDEX l2_insertions_srv_port ON l2_insertions (srv_port_id);
    `,
  },
  {
    version: 2,
    name: "a route's learned flag",
    // Whether a route was learned (from BGP, say) rather than written through the API: never so
    // for a route the API wrote. A column, so that ?learned= filters a router's routes.
    sql: `ALTER TABLE routes ADD COLUMN learned boolean NOT NULL DEFAULT false;`,
  },
];
