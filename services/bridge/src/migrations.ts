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
