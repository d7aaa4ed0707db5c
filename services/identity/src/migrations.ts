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
  {
    version: 3,
    name: "token generations from one sequence",
    // A token is current while its generation is not older than its user's. Generations were
    // counted per user from 1, so a user deleted and made again under the same id started at 1
    // again, and the tokens of its earlier self (any role, any tenant) passed for its own. Every
    // generation, a new user's and a bumped one, now comes from one sequence: a user made again
    // starts above every generation its earlier self had. The sequence starts a million above
    // the highest generation left, past what a user deleted before this migration could have
    // reached through changes and logouts.
    sql: `
      CREATE SEQUENCE token_generations AS integer;
      SELECT setval('token_generations', coalesce((SELECT max(token_generation) FROM users), 0) + 1000000);
      ALTER TABLE users ALTER COLUMN token_generation SET DEFAULT nextval('token_generations');
      CREATE OR REPLACE FUNCTION users_bump_token_generation() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        NEW.token_generation := nextval('token_generations');
        RETURN NEW;
      END $$;
    `,
  },
  {
    version: 4,
    name: "list filter indexes",
    // The users of a tenant (?tenantId=) read the index, in list order, instead of every row.
    sql: "CREATE INDEX users_tenant_seq ON users (tenant_id, seq);",
  },
  {
    version: 5,
    name: "signing keys",
    // The Ed25519 keys that sign tokens (private JWKs; only this service's role reads this
    // schema). A key is published from its creation and signs from `signs_from` on (a new key a
    // little later, so every part has it before the first token it signs); the newest key
    // that signs is used; a retired one stays published until the tokens it signed have
    // expired, then goes.
    sql: `
      CREATE TABLE signing_keys (
        kid text PRIMARY KEY,
        private_jwk jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        signs_from timestamptz NOT NULL DEFAULT now(),
        retired_at timestamptz
      );
    `,
  },
  {
    version: 6,
    name: "ended tokens",
    // A logout of one session ends that token alone: its id (jti) is kept until the token
    // expires, and every part refuses it like a token of an older generation. A logout
    // everywhere moves the generation on and the list goes; so does a deleted user's.
    sql: `
      CREATE TABLE ended_tokens (
        user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        token_id text NOT NULL,
        expires_at timestamptz NOT NULL,
        PRIMARY KEY (user_id, token_id)
      );
      CREATE INDEX ended_tokens_expires ON ended_tokens (expires_at);
    `,
  },
];
