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
  {
    version: 3,
    name: "routers, ports and links; routes on real routers",
    // Routers and ports (topology.md §1-§3) beside the routes, so that a router's or a port's
    // delete and its routes are one transaction. A port's device is a router of this table
    // (router_id, its foreign key, set for Router ports) or a bridge of the bridge service
    // (device_id only). A port's tenant is its device's, kept on the port so that lists filter
    // by it. host_id and interface_name are a port's binding (topology.md §6).
    //
    // Earlier releases accepted any router id on a route: every route keeps its place by
    // adopting its router (a router with that id, no tenant, a name saying so) and, for a
    // Normal route, its next-hop port (an unaddressed port of the router of the port's first
    // route, as MidoNet 5 allows router ports without an address). The foreign keys then hold
    // for every row, old and new.
    sql: `
      CREATE TABLE routers (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL UNIQUE,
        tenant_id text,
        name text,
        admin_state_up boolean NOT NULL DEFAULT true,
        inbound_filter_id uuid,
        outbound_filter_id uuid,
        load_balancer_id uuid,
        as_number integer NOT NULL DEFAULT 0
      );
      CREATE INDEX routers_tenant_seq ON routers (tenant_id, seq);
      CREATE INDEX routers_load_balancer ON routers (load_balancer_id);

      CREATE TABLE ports (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL UNIQUE,
        type text NOT NULL CHECK (type IN ('Bridge', 'Router', 'Vxlan')),
        device_id uuid NOT NULL,
        router_id uuid GENERATED ALWAYS AS (CASE WHEN type = 'Router' THEN device_id END) STORED REFERENCES routers (id),
        tenant_id text,
        admin_state_up boolean NOT NULL DEFAULT true,
        inbound_filter_id uuid,
        outbound_filter_id uuid,
        inbound_mirror_ids uuid[] NOT NULL DEFAULT '{}',
        outbound_mirror_ids uuid[] NOT NULL DEFAULT '{}',
        vif_id uuid,
        vlan_id integer,
        port_address text,
        network_length integer,
        port_mac text,
        peer_id uuid REFERENCES ports (id),
        host_id uuid,
        interface_name text,
        vtep_id uuid,
        CHECK (peer_id IS DISTINCT FROM id)
      );
      CREATE INDEX ports_device_seq ON ports (device_id, seq);
      CREATE INDEX ports_tenant_seq ON ports (tenant_id, seq);
      CREATE INDEX ports_peer ON ports (peer_id);
      CREATE INDEX ports_host ON ports (host_id);

      -- Bridges the bridge service announced deleted: a port created for one while its
      -- deletion is handled must not survive it.
      CREATE TABLE deleted_bridges (
        id uuid PRIMARY KEY,
        at timestamptz NOT NULL DEFAULT now()
      );

      INSERT INTO routers (id, name)
        SELECT router_id, 'adopted: routes of an earlier release named this router'
        FROM routes GROUP BY router_id ORDER BY min(seq);
      INSERT INTO ports (id, type, device_id)
        SELECT DISTINCT ON (next_hop_port) next_hop_port, 'Router', router_id
        FROM routes WHERE next_hop_port IS NOT NULL ORDER BY next_hop_port, seq;

      ALTER TABLE routes ADD CONSTRAINT routes_router FOREIGN KEY (router_id) REFERENCES routers (id);
      ALTER TABLE routes ADD CONSTRAINT routes_next_hop_port FOREIGN KEY (next_hop_port) REFERENCES ports (id);
      CREATE INDEX routes_next_hop_port ON routes (next_hop_port);
    `,
  },
  {
    version: 4,
    name: "ip address groups and port groups",
    // IP address groups and their addresses (an address once per group, IPv6 in RFC 5952 form);
    // port groups and their member ports. A membership goes with its group or its port (the
    // port's delete announces it first; the foreign key only backs that up).
    sql: `
      CREATE TABLE ip_addr_groups (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL UNIQUE,
        name text NOT NULL
      );
      CREATE TABLE ip_addr_group_addrs (
        id bigserial PRIMARY KEY,
        ip_addr_group_id uuid NOT NULL REFERENCES ip_addr_groups (id) ON DELETE CASCADE,
        version integer NOT NULL CHECK (version IN (4, 6)),
        addr text NOT NULL,
        UNIQUE (ip_addr_group_id, addr)
      );

      CREATE TABLE port_groups (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL UNIQUE,
        tenant_id text,
        name text,
        stateful boolean NOT NULL DEFAULT false
      );
      CREATE INDEX port_groups_tenant_seq ON port_groups (tenant_id, seq);
      CREATE TABLE port_group_ports (
        id bigserial PRIMARY KEY,
        port_group_id uuid NOT NULL REFERENCES port_groups (id) ON DELETE CASCADE,
        port_id uuid NOT NULL REFERENCES ports (id) ON DELETE CASCADE,
        UNIQUE (port_group_id, port_id)
      );
      CREATE INDEX port_group_ports_port ON port_group_ports (port_id, id);
    `,
  },
  {
    version: 5,
    name: "ports as shown",
    // A port as the API shows it, for /ports' field filters: the derived fields (active,
    // networkAddress) and those a port type does not have (a router port's vlanId) as columns
    // of the values shown, and the device of the port's peer (a device's peer_ports). A column
    // added to ports later is added here too.
    sql: `
      CREATE VIEW ports_shown AS
        SELECT p.id, seq, type, device_id, router_id, tenant_id, admin_state_up, inbound_filter_id,
          outbound_filter_id, inbound_mirror_ids, outbound_mirror_ids, vif_id,
          CASE WHEN type = 'Bridge' THEN coalesce(vlan_id, 0) END AS vlan_id,
          port_address,
          CASE WHEN port_address IS NOT NULL THEN coalesce(network_length, 0) END AS network_length,
          CASE WHEN port_address IS NOT NULL THEN host(network(set_masklen(port_address::inet, coalesce(network_length, 0)))) END AS network_address,
          port_mac, p.peer_id, host_id, interface_name, vtep_id, false AS active,
          (SELECT peer.device_id FROM ports peer WHERE peer.id = p.peer_id) AS peer_device_id
        FROM ports p;
    `,
  },
  {
    version: 6,
    name: "deleted load balancers",
    // Load balancers the lb service announced deleted: a router given one while its deletion is
    // handled must not keep it (the deletion clears routers' loadBalancerId).
    sql: `
      CREATE TABLE deleted_load_balancers (
        id uuid PRIMARY KEY,
        at timestamptz NOT NULL DEFAULT now()
      );
    `,
  },
  {
    version: 7,
    name: "an index for each id a router or port list filters by",
    // ?inboundFilterId=, ?outboundFilterId= (routers and ports), ?vifId= and ?vtepId= (ports)
    // read an index instead of every row of the table.
    sql: `
      CREATE INDEX routers_inbound_filter ON routers (inbound_filter_id);
      CREATE INDEX routers_outbound_filter ON routers (outbound_filter_id);
      CREATE INDEX ports_inbound_filter ON ports (inbound_filter_id);
      CREATE INDEX ports_outbound_filter ON ports (outbound_filter_id);
      CREATE INDEX ports_vif ON ports (vif_id);
      CREATE INDEX ports_vtep ON ports (vtep_id);
    `,
  },
  {
    version: 8,
    name: "deleted chains and mirrors",
    // Chains and mirrors the policy service announced deleted: a router or port given one while
    // its deletion is handled must not keep it (the deletion clears filters and mirror lists).
    // The mirror lists' indexes find the ports naming a deleted mirror.
    sql: `
      CREATE TABLE deleted_chains (
        id uuid PRIMARY KEY,
        at timestamptz NOT NULL DEFAULT now()
      );
      CREATE TABLE deleted_mirrors (
        id uuid PRIMARY KEY,
        at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX ports_inbound_mirrors ON ports USING gin (inbound_mirror_ids);
      CREATE INDEX ports_outbound_mirrors ON ports USING gin (outbound_mirror_ids);
    `,
  },
  {
    version: 9,
    name: "routers' mirror lists",
    // A router's inboundMirrorIds and outboundMirrorIds (policy.md §4), as a port's: every
    // existing router starts with none. The indexes find the routers naming a deleted mirror.
    sql: `
      ALTER TABLE routers ADD COLUMN inbound_mirror_ids uuid[] NOT NULL DEFAULT '{}';
      ALTER TABLE routers ADD COLUMN outbound_mirror_ids uuid[] NOT NULL DEFAULT '{}';
      CREATE INDEX routers_inbound_mirrors ON routers USING gin (inbound_mirror_ids);
      CREATE INDEX routers_outbound_mirrors ON routers USING gin (outbound_mirror_ids);
    `,
  },
  {
    version: 10,
    name: "tombstones' age index",
    // A tombstone's burial prunes those older than a day (kit/tombstones.ts): without an index on
    // their age that prune read every tombstone, so each deletion cost as much as all before it.
    sql: `
      CREATE INDEX deleted_bridges_at ON deleted_bridges (at);
      CREATE INDEX deleted_load_balancers_at ON deleted_load_balancers (at);
      CREATE INDEX deleted_chains_at ON deleted_chains (at);
      CREATE INDEX deleted_mirrors_at ON deleted_mirrors (at);
    `,
  },
  {
    version: 11,
    name: "mirror lists' indexes over the lists that hold one",
    // Most routers and ports name no mirror; a GIN index still wrote an entry for each empty
    // list at every insert. The indexes now hold only the rows that name one, which is all a
    // mirror's deletion looks for (kit/policy-refs.ts asks with the same condition).
    sql: `
      DROP INDEX ports_inbound_mirrors, ports_outbound_mirrors, routers_inbound_mirrors, routers_outbound_mirrors;
      CREATE INDEX ports_inbound_mirrors ON ports USING gin (inbound_mirror_ids) WHERE inbound_mirror_ids <> '{}';
      CREATE INDEX ports_outbound_mirrors ON ports USING gin (outbound_mirror_ids) WHERE outbound_mirror_ids <> '{}';
      CREATE INDEX routers_inbound_mirrors ON routers USING gin (inbound_mirror_ids) WHERE inbound_mirror_ids <> '{}';
      CREATE INDEX routers_outbound_mirrors ON routers USING gin (outbound_mirror_ids) WHERE outbound_mirror_ids <> '{}';
    `,
  },
];
