import type { Migration } from "@vnm/kit";

export const migrations: Migration[] = [
  {
    version: 1,
    name: "users",
    sql: `
      CREATE TABLE users (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL UNIQUE,
        name text NOT NULL UNIQUE,
        password_hash text NOT NULL,
        tenant_id text,
        roles text[] NOT NULL
      );
    `,
  },
];
