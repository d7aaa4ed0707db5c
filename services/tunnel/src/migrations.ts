import type { Migration } from "@vnm/kit";

export const migrations: Migration[] = [
  {
    version: 1,
    name: "tunnel zones and vteps",
    sql: `
      CREATE TABLE tunnel_zones (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL UNIQUE,
        name text NOT NULL,
        type text NOT NULL
      );
      -- Names are unique per type ignoring case, whoever writes at the same time.
      CREATE UNIQUE INDEX tunnel_zones_name ON tunnel_zones (type, lower(name));

      CREATE TABLE vteps (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL UNIQUE,
        management_ip text NOT NULL,
        management_port integer NOT NULL,
        tunnel_zone_id uuid NOT NULL REFERENCES tunnel_zones (id),
        -- What the device says, kept by the OVSDB session that watches it.
        connection_state text NOT NULL DEFAULT 'disconnected',
        name text,
        description text,
        tunnel_ips text[] NOT NULL DEFAULT '{}',
        ports jsonb NOT NULL DEFAULT '[]',
        CONSTRAINT vteps_address UNIQUE (management_ip, management_port)
      );
      CREATE INDEX vteps_zone ON vteps (tunnel_zone_id);
    `,
  },
  {
    version: 2,
    name: "list filter indexes",
    // A list filtered by these columns reads the index, in list order, instead of every row.
    sql: `
      CREATE INDEX tunnel_zones_name_seq ON tunnel_zones (name, seq);
      CREATE INDEX vteps_name_seq ON vteps (name, seq);
    `,
  },
  {
    version: 3,
    name: "vtep ports as rows",
    // A device's ports, one row each, so a write stores the ports that changed rather than the
    // whole list (a chatty device rewrote every port's bytes per change). A port name is kept once.
    sql: `
      CREATE TABLE vtep_ports (
        vtep_id uuid NOT NULL REFERENCES vteps (id) ON DELETE CASCADE,
        name text NOT NULL,
        description text NOT NULL,
        PRIMARY KEY (vtep_id, name)
      );
      INSERT INTO vtep_ports (vtep_id, name, description)
        SELECT DISTINCT ON (v.id, p.name) v.id, p.name, coalesce(p.description, '')
        FROM vteps v, jsonb_to_recordset(v.ports) AS p(name text, description text)
        WHERE p.name IS NOT NULL
        ORDER BY v.id, p.name;
      ALTER TABLE vteps DROP COLUMN ports;
    `,
  },
  {
    version: 4,
    name: "vteps.ports kept for the previous release",
    // Migration 3 dropped vteps.ports, which the release before it reads during a rolling upgrade
    // (services/kit/test/upgrade.e2e.spec.ts). The column is back, filled from vtep_ports as it
    // stands; this release reads and writes vtep_ports only, and a later release drops the column
    // (expand, then contract).
    sql: `
      ALTER TABLE vteps ADD COLUMN IF NOT EXISTS ports jsonb NOT NULL DEFAULT '[]';
      UPDATE vteps v SET ports = coalesce(
        (SELECT jsonb_agg(jsonb_build_object('name', p.name, 'description', p.description) ORDER BY p.name) FROM vtep_ports p WHERE p.vtep_id = v.id),
        '[]'
      );
    `,
  },
  {
    version: 5,
    name: "hosts and tunnel zone hosts",
    sql: `
      CREATE TABLE hosts (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL UNIQUE,
        name text,
        addresses text[] NOT NULL DEFAULT '{}',
        flooding_proxy_weight integer NOT NULL,
        container_weight integer NOT NULL,
        container_limit integer NOT NULL,
        enforce_container_limit boolean NOT NULL,
        -- Whether its agent runs: never, there is no agent (a column so that ?alive= filters).
        alive boolean NOT NULL DEFAULT false
      );
      CREATE INDEX hosts_name_seq ON hosts (name, seq);

      -- A host's membership of a zone; a host deleted leaves its zones (hosts.ts), a zone
      -- deleted takes its memberships (the kit, as a zone's children).
      CREATE TABLE tunnel_zone_hosts (
        id bigserial PRIMARY KEY,
        tunnel_zone_id uuid NOT NULL REFERENCES tunnel_zones (id),
        host_id uuid NOT NULL REFERENCES hosts (id),
        ip_address text NOT NULL,
        -- One membership per host and zone, whoever writes at the same time.
        CONSTRAINT tunnel_zone_hosts_member UNIQUE (tunnel_zone_id, host_id)
      );
      CREATE INDEX tunnel_zone_hosts_host ON tunnel_zone_hosts (host_id);
    `,
  },
  {
    version: 6,
    name: "vtep bindings and bridge VNIs",
    sql: `
      -- A VTEP's port and VLAN bound to a bridge (bindings.ts); the pair once per VTEP.
      CREATE TABLE vtep_bindings (
        id bigserial PRIMARY KEY,
        vtep_id uuid NOT NULL REFERENCES vteps (id),
        port_name text NOT NULL,
        vlan_id integer NOT NULL,
        bridge_id uuid NOT NULL,
        CONSTRAINT vtep_bindings_pair UNIQUE (vtep_id, port_name, vlan_id)
      );
      CREATE INDEX vtep_bindings_bridge ON vtep_bindings (bridge_id, vtep_id);

      -- A bridge's VNI, given with its first binding and kept: 10000 up, within 24 bits.
      CREATE SEQUENCE bridge_vni_seq AS integer START 10000 MINVALUE 10000 MAXVALUE 16777215;
      CREATE TABLE bridge_vnis (
        bridge_id uuid PRIMARY KEY,
        vni integer NOT NULL UNIQUE DEFAULT nextval('bridge_vni_seq')
      );
    `,
  },
  {
    version: 7,
    name: "vxlan port sync queue",
    // (bridge, VTEP) pairs whose VXLAN port the routing service must be told of (vxlan-sync.ts),
    // queued by the binding writes themselves.
    sql: `
      CREATE TABLE vxlan_port_sync (
        bridge_id uuid NOT NULL,
        vtep_id uuid NOT NULL,
        due timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (bridge_id, vtep_id)
      );
      CREATE INDEX vxlan_port_sync_due ON vxlan_port_sync (due);
    `,
  },
  {
    version: 8,
    name: "vtep connection error",
    // Why a VTEP is in error, as its session last said (sessions.ts); null otherwise.
    sql: `ALTER TABLE vteps ADD COLUMN connection_error text;`,
  },
  {
    version: 9,
    name: "deleted bridges",
    // Bridges the bridge service announced deleted (bindings.ts): a binding POSTed for one while
    // its deletion is handled must not survive it.
    sql: `
      CREATE TABLE deleted_bridges (
        id uuid PRIMARY KEY,
        at timestamptz NOT NULL DEFAULT now()
      );
    `,
  },
  {
    version: 10,
    name: "tombstones' age index",
    // A tombstone's burial prunes those older than a day (kit/tombstones.ts): without an index on
    // their age that prune read every tombstone, so each deletion cost as much as all before it.
    sql: `
      CREATE INDEX deleted_bridges_at ON deleted_bridges (at);
    `,
  },
];
