import type { Migration } from "@vnm/kit";

export const migrations: Migration[] = [
  {
    version: 1,
    name: "chains, rules and mirrors",
    // A rule's place in its chain is its `rank`: ranks are spaced (65536 apart when a chain is
    // renumbered), an insert takes the midpoint of its neighbours' (or the first's less, the last's
    // more), and the chain is renumbered only when two neighbours are adjacent; its position is
    // the count of its chain's lower ranks, plus one (rules_now), or the row number over rank in
    // a list. The (chain_id, rank) constraint is deferrable so that a renumbering UPDATE is checked
    // once, at its end. The foreign keys neither cascade nor clear: a chain's delete takes its
    // rules, and the jump rules into it, itself, announcing each.
    sql: `
      CREATE TABLE chains (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL UNIQUE,
        tenant_id text,
        name text
      );
      CREATE INDEX chains_tenant_seq ON chains (tenant_id, seq);
      CREATE INDEX chains_name_seq ON chains (name, seq);
      CREATE TABLE rules (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL UNIQUE,
        chain_id uuid NOT NULL REFERENCES chains (id),
        rank bigint NOT NULL,
        type text NOT NULL,
        jump_chain_id uuid REFERENCES chains (id),
        fields jsonb NOT NULL,
        CONSTRAINT rules_chain_rank UNIQUE (chain_id, rank) DEFERRABLE INITIALLY IMMEDIATE
      );
      CREATE INDEX rules_jump_chain ON rules (jump_chain_id) WHERE jump_chain_id IS NOT NULL;
      CREATE INDEX rules_type_seq ON rules (type, seq);
      CREATE VIEW rules_now AS
        SELECT r.*, c.tenant_id,
          (SELECT count(*) FROM rules o WHERE o.chain_id = r.chain_id AND o.rank < r.rank) + 1 AS position
        FROM rules r JOIN chains c ON c.id = r.chain_id;
      CREATE TABLE mirrors (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL UNIQUE,
        to_port_id uuid NOT NULL,
        conditions jsonb NOT NULL DEFAULT '[]'
      );
      CREATE INDEX mirrors_to_port_seq ON mirrors (to_port_id, seq);
      -- Ports the routing service announced deleted: a mirror written for one while its deletion
      -- is handled must not survive it.
      CREATE TABLE deleted_ports (
        id uuid PRIMARY KEY,
        at timestamptz NOT NULL DEFAULT now()
      );
    `,
  },
  {
    version: 2,
    name: "tombstones' age index",
    // A tombstone's burial prunes those older than a day (kit/tombstones.ts): without an index on
    // their age that prune read every tombstone, so each deletion cost as much as all before it.
    sql: `
      CREATE INDEX deleted_ports_at ON deleted_ports (at);
    `,
  },
];
