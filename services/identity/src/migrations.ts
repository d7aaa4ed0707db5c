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
  {
    version: 2,
    name: "token generation",
    // A password, role or tenant change ends the user's tokens: the generation moves on with it.
    sql: `
      ALTER TABLE users ADD COLUMN token_generation integer NOT NULL DEFAULT 1;
      CREATE FUNCTION users_bump_token_generation() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        NEW.token_generation := OLD.token_generation + 1;
        RETURN NEW;
      END $$;
      CREATE TRIGGER users_token_generation BEFORE UPDATE OF password_hash, roles, tenant_id ON users
        FOR EACH ROW
        WHEN (OLD.password_hash IS DISTINCT FROM NEW.password_hash OR OLD.roles IS DISTINCT FROM NEW.roles
              OR OLD.tenant_id IS DISTINCT FROM NEW.tenant_id)
        EXECUTE FUNCTION users_bump_token_generation();
    `,
  },
];
