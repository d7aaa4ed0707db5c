import type { Migration } from "@vnm/kit";

export const migrations: Migration[] = [
  {
    version: 1,
    name: "bridges",
    sql: `
      CREATE TABLE bridges (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL UNIQUE,
        tenant_id text,
        name text,
        admin_state_up boolean NOT NULL DEFAULT true,
        inbound_filter_id uuid,
        outbound_filter_id uuid,
        inbound_mirror_ids uuid[] NOT NULL DEFAULT '{}',
        outbound_mirror_ids uuid[] NOT NULL DEFAULT '{}',
        vxlan_port_ids uuid[] NOT NULL DEFAULT '{}'
      );
      CREATE INDEX bridges_tenant_seq ON bridges (tenant_id, seq);
    `,
  },
];

migrations.push({
  version: 2,
  name: "dhcp and mac table",
  sql: `
    CREATE TABLE dhcp_subnets (
      id bigserial PRIMARY KEY,
      bridge_id uuid NOT NULL REFERENCES bridges (id) ON DELETE CASCADE,
      prefix text NOT NULL,
      length integer NOT NULL,
      default_gateway text,
      server_addr text,
      dns_server_addrs text[] NOT NULL DEFAULT '{}',
      interface_mtu integer,
      opt121_routes jsonb NOT NULL DEFAULT '[]',
      enabled boolean NOT NULL DEFAULT true,
      UNIQUE (bridge_id, prefix, length)
    );
    CREATE TABLE dhcp_hosts (
      id bigserial PRIMARY KEY,
      subnet_id bigint NOT NULL REFERENCES dhcp_subnets (id) ON DELETE CASCADE,
      mac text NOT NULL,
      ip text NOT NULL,
      name text NOT NULL,
      extra_dhcp_opts jsonb NOT NULL DEFAULT '[]',
      UNIQUE (subnet_id, mac)
    );
    CREATE TABLE dhcp6_subnets (
      id bigserial PRIMARY KEY,
      bridge_id uuid NOT NULL REFERENCES bridges (id) ON DELETE CASCADE,
      prefix text NOT NULL,
      length integer NOT NULL,
      UNIQUE (bridge_id, prefix, length)
    );
    CREATE TABLE mac_ports (
      id bigserial PRIMARY KEY,
      bridge_id uuid NOT NULL REFERENCES bridges (id) ON DELETE CASCADE,
      vlan_id integer NOT NULL,
      mac text NOT NULL,
      port_id uuid NOT NULL,
      UNIQUE (bridge_id, vlan_id, mac, port_id)
    );
    CREATE INDEX mac_ports_bridge_vlan ON mac_ports (bridge_id, vlan_id, id);
  `,
});

migrations.push({
  version: 3,
  name: "list filter indexes",
  // A list filtered by name reads the index, in list order, instead of every row (the tenant
  // filter has bridges_tenant_seq).
  sql: "CREATE INDEX bridges_name_seq ON bridges (name, seq);",
});

migrations.push({
  version: 4,
  name: "reference filter indexes",
  // A list filtered by a filter chain (?inboundFilterId=, ?outboundFilterId=) reads the index, in
  // list order, instead of every row.
  sql: `
    CREATE INDEX IF NOT EXISTS bridges_inbound_filter_seq ON bridges (inbound_filter_id, seq);
    CREATE INDEX IF NOT EXISTS bridges_outbound_filter_seq ON bridges (outbound_filter_id, seq);
  `,
});

migrations.push({
  version: 5,
  name: "arp table",
  // A bridge's ARP table: IPv4-MAC pairs, one row per pair (an address may have several MACs).
  sql: `
    CREATE TABLE arp_entries (
      id bigserial PRIMARY KEY,
      bridge_id uuid NOT NULL REFERENCES bridges (id) ON DELETE CASCADE,
      ip text NOT NULL,
      mac text NOT NULL,
      UNIQUE (bridge_id, ip, mac)
    );
  `,
});

migrations.push({
  version: 6,
  name: "deleted chains and mirrors",
  // Chains and mirrors the policy service announced deleted: a bridge given one while its deletion
  // is handled must not keep it (the deletion clears the bridges' filters and mirror lists). The
  // mirror lists' indexes find the bridges naming a deleted mirror.
  sql: `
    CREATE TABLE deleted_chains (
      id uuid PRIMARY KEY,
      at timestamptz NOT NULL DEFAULT now()
    );
    CREATE TABLE deleted_mirrors (
      id uuid PRIMARY KEY,
      at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX bridges_inbound_mirrors ON bridges USING gin (inbound_mirror_ids);
    CREATE INDEX bridges_outbound_mirrors ON bridges USING gin (outbound_mirror_ids);
  `,
});

migrations.push({
  version: 7,
  name: "tombstones' age index",
  // A tombstone's burial prunes those older than a day (kit/tombstones.ts): without an index on
  // their age that prune read every tombstone, so each deletion cost as much as all before it.
  sql: `
    CREATE INDEX deleted_chains_at ON deleted_chains (at);
    CREATE INDEX deleted_mirrors_at ON deleted_mirrors (at);
  `,
});

migrations.push({
  version: 8,
  name: "ARP entries a device taught",
  // An ARP entry a VTEP's device taught (learned-macs.ts) is `learned`; one written through the
  // API is not, and a device forgetting its MAC, or its port leaving, never takes it. Entries
  // already there count as taught where their MAC is on one of the bridge's VXLAN ports, as the
  // service treated them until now.
  sql: `
    ALTER TABLE arp_entries ADD COLUMN learned boolean NOT NULL DEFAULT false;
    UPDATE arp_entries a SET learned = true
      FROM bridges b
      WHERE b.id = a.bridge_id AND EXISTS (
        SELECT 1 FROM mac_ports m WHERE m.bridge_id = a.bridge_id AND m.vlan_id = 0 AND m.mac = a.mac AND m.port_id = ANY (b.vxlan_port_ids)
      );
  `,
});

migrations.push({
  version: 9,
  name: "mirror lists' indexes over the lists that hold one",
  // Most bridges name no mirror; a GIN index still wrote an entry for each empty list at every
  // insert. The indexes now hold only the rows that name one, which is all a mirror's deletion
  // looks for (kit/policy-refs.ts asks with the same condition).
  sql: `
    DROP INDEX bridges_inbound_mirrors, bridges_outbound_mirrors;
    CREATE INDEX bridges_inbound_mirrors ON bridges USING gin (inbound_mirror_ids) WHERE inbound_mirror_ids <> '{}';
    CREATE INDEX bridges_outbound_mirrors ON bridges USING gin (outbound_mirror_ids) WHERE outbound_mirror_ids <> '{}';
  `,
});
