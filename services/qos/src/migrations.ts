import type { Migration } from "@vnm/kit";

export const migrations: Migration[] = [
  {
    version: 1,
    name: "qos policies",
    sql: `
      CREATE TABLE qos_policies (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL UNIQUE,
        tenant_id text,
        name text NOT NULL,
        shared boolean NOT NULL,
        description text NOT NULL
      );
      CREATE INDEX qos_policies_tenant_seq ON qos_policies (tenant_id, seq);
    `,
  },
  {
    version: 2,
    name: "list filter indexes",
    // A list filtered by these columns reads the index, in list order, instead of every row.
    sql: `
      CREATE INDEX qos_policies_name_seq ON qos_policies (name, seq);
    `,
  },
];
