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
  {
    version: 3,
    name: "qos rules",
    // A rule belongs to one policy; the foreign key neither cascades nor clears: the policy's
    // delete takes its rules itself, announcing each. The views add the policy's tenant, which
    // the rule follows.
    sql: `
      CREATE TABLE qos_bw_limit_rules (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL UNIQUE,
        policy_id uuid NOT NULL REFERENCES qos_policies (id),
        max_kbps integer NOT NULL DEFAULT 0 CHECK (max_kbps >= 0),
        max_burst_kb integer CHECK (max_burst_kb >= 0)
      );
      CREATE INDEX qos_bw_limit_rules_policy_seq ON qos_bw_limit_rules (policy_id, seq);
      CREATE TABLE qos_dscp_rules (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL UNIQUE,
        policy_id uuid NOT NULL REFERENCES qos_policies (id),
        dscp_mark integer NOT NULL DEFAULT 0 CHECK (dscp_mark BETWEEN 0 AND 63)
      );
      CREATE INDEX qos_dscp_rules_policy_seq ON qos_dscp_rules (policy_id, seq);
      CREATE VIEW qos_bw_limit_rules_now AS
        SELECT r.*, p.tenant_id FROM qos_bw_limit_rules r JOIN qos_policies p ON p.id = r.policy_id;
      CREATE VIEW qos_dscp_rules_now AS
        SELECT r.*, p.tenant_id FROM qos_dscp_rules r JOIN qos_policies p ON p.id = r.policy_id;
    `,
  },
];
