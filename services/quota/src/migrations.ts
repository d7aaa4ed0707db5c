import type { Migration } from "@vnm/kit";

export const migrations: Migration[] = [
  {
    version: 1,
    name: "quota overrides",
    // A tenant's limits that are not the defaults (collection -> limit); a tenant without a row
    // has the defaults. `seq` orders the list.
    sql: `
      CREATE TABLE quota_overrides (
        tenant_id text PRIMARY KEY,
        seq bigserial NOT NULL UNIQUE,
        limits jsonb NOT NULL
      );
    `,
  },
];
