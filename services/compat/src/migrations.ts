import type { Migration } from "@vnm/kit";

export const migrations: Migration[] = [
  {
    version: 1,
    name: "compat lb family and security group rules",
    sql: `
      CREATE TABLE pools (
        id uuid PRIMARY KEY, seq bigserial NOT NULL UNIQUE, tenant_id text NOT NULL,
        admin_state_up boolean NOT NULL, description text, lb_method text, name text, protocol text,
        provider text, router_id uuid, status text, status_description text, subnet_id uuid
      );
      CREATE TABLE health_monitors (
        id uuid PRIMARY KEY, seq bigserial NOT NULL UNIQUE, tenant_id text NOT NULL,
        admin_state_up boolean NOT NULL, delay integer NOT NULL, max_retries integer NOT NULL,
        timeout integer NOT NULL, type text
      );
      -- A pool's health monitors: each pair once.
      CREATE TABLE pool_monitors (
        pool_id uuid NOT NULL REFERENCES pools (id), health_monitor_id uuid NOT NULL REFERENCES health_monitors (id),
        seq bigserial NOT NULL, status text, status_description text,
        PRIMARY KEY (pool_id, health_monitor_id)
      );
      CREATE INDEX pool_monitors_monitor ON pool_monitors (health_monitor_id);
      CREATE TABLE members (
        id uuid PRIMARY KEY, seq bigserial NOT NULL UNIQUE, tenant_id text NOT NULL,
        address text, admin_state_up boolean NOT NULL, pool_id uuid REFERENCES pools (id),
        protocol_port integer, status text, status_description text, weight integer NOT NULL
      );
      -- Unique when all three are set (NULLs are distinct).
      CREATE UNIQUE INDEX members_endpoint ON members (pool_id, address, protocol_port);
      CREATE TABLE vips (
        id uuid PRIMARY KEY, seq bigserial NOT NULL UNIQUE, tenant_id text NOT NULL,
        address text, admin_state_up boolean NOT NULL, connection_limit bigint NOT NULL, description text,
        name text, pool_id uuid REFERENCES pools (id), port_id uuid, protocol text, protocol_port integer,
        session_persistence jsonb, status text, status_description text, subnet_id uuid
      );
      -- One VIP per pool.
      CREATE UNIQUE INDEX vips_pool ON vips (pool_id);
      CREATE TABLE security_group_rules (
        id uuid PRIMARY KEY, seq bigserial NOT NULL UNIQUE, tenant_id text NOT NULL,
        direction text NOT NULL, security_group_id uuid NOT NULL, ethertype text NOT NULL, name text,
        port_range_min integer, port_range_max integer, protocol text, remote_group_id uuid, remote_ip_prefix text
      );
      -- An identical rule in the same group is refused, whoever writes at the same time.
      CREATE UNIQUE INDEX security_group_rules_same ON security_group_rules (
        security_group_id, direction, ethertype, coalesce(protocol, ''), coalesce(port_range_min, -1),
        coalesce(port_range_max, -1), coalesce(remote_ip_prefix, ''), coalesce(remote_group_id::text, ''));

      -- Derived fields, read as they are now.
      CREATE VIEW pools_now AS SELECT p.*,
        ARRAY(SELECT m.id FROM members m WHERE m.pool_id = p.id ORDER BY m.seq) AS members,
        ARRAY(SELECT a.health_monitor_id FROM pool_monitors a WHERE a.pool_id = p.id ORDER BY a.seq) AS health_monitors,
        (SELECT v.id FROM vips v WHERE v.pool_id = p.id) AS vip_id
        FROM pools p;
      CREATE VIEW health_monitors_now AS SELECT h.*,
        coalesce((SELECT json_agg(json_build_object('pool_id', a.pool_id, 'status', a.status, 'status_description', a.status_description) ORDER BY a.seq)
                  FROM pool_monitors a WHERE a.health_monitor_id = h.id), '[]') AS pools
        FROM health_monitors h;
    `,
  },
  {
    version: 2,
    name: "security group rules identical within a tenant only",
    // A group id names a group of one tenant: another tenant's identical rule in a group of the
    // same id neither blocks a rule nor reveals that it exists.
    sql: `
      DROP INDEX security_group_rules_same;
      CREATE UNIQUE INDEX security_group_rules_same ON security_group_rules (
        tenant_id, security_group_id, direction, ethertype, coalesce(protocol, ''), coalesce(port_range_min, -1),
        coalesce(port_range_max, -1), coalesce(remote_ip_prefix, ''), coalesce(remote_group_id::text, ''));
    `,
  },
  {
    version: 3,
    name: "list filter indexes",
    // A list filtered by these columns reads the index, in list order, instead of every row.
    sql: `
      CREATE INDEX pools_tenant_seq ON pools (tenant_id, seq);
      CREATE INDEX pools_name_seq ON pools (name, seq);
      CREATE INDEX health_monitors_tenant_seq ON health_monitors (tenant_id, seq);
      CREATE INDEX members_tenant_seq ON members (tenant_id, seq);
      CREATE INDEX vips_tenant_seq ON vips (tenant_id, seq);
      CREATE INDEX vips_name_seq ON vips (name, seq);
      CREATE INDEX security_group_rules_tenant_seq ON security_group_rules (tenant_id, seq);
      CREATE INDEX security_group_rules_name_seq ON security_group_rules (name, seq);
    `,
  },
  {
    version: 4,
    name: "reference filter indexes",
    // A list filtered by an id it refers to reads the index, in list order, instead of every
    // row. A member's and a VIP's pool_id have theirs (members_endpoint, vips_pool); a rule's
    // security_group_id has one only after its tenant (security_group_rules_same).
    sql: `
      CREATE INDEX IF NOT EXISTS pools_router_seq ON pools (router_id, seq);
      CREATE INDEX IF NOT EXISTS pools_subnet_seq ON pools (subnet_id, seq);
      CREATE INDEX IF NOT EXISTS vips_port_seq ON vips (port_id, seq);
      CREATE INDEX IF NOT EXISTS vips_subnet_seq ON vips (subnet_id, seq);
      CREATE INDEX IF NOT EXISTS security_group_rules_group_seq ON security_group_rules (security_group_id, seq);
      CREATE INDEX IF NOT EXISTS security_group_rules_remote_group_seq ON security_group_rules (remote_group_id, seq);
    `,
  },
];
