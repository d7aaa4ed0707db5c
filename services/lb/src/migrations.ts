import type { Migration } from "@vnm/kit";

export const migrations: Migration[] = [
  {
    version: 1,
    name: "load balancers, pools, health monitors",
    // The foreign keys neither cascade nor clear: the handlers do both explicitly, so that
    // every row a delete takes or changes is announced.
    sql: `
      CREATE TABLE load_balancers (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL UNIQUE,
        admin_state_up boolean NOT NULL DEFAULT true,
        router_id uuid
      );
      CREATE TABLE health_monitors (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL UNIQUE,
        type text NOT NULL,
        admin_state_up boolean NOT NULL DEFAULT true,
        delay integer NOT NULL DEFAULT 0 CHECK (delay >= 0),
        max_retries integer NOT NULL DEFAULT 0 CHECK (max_retries >= 0),
        timeout integer NOT NULL DEFAULT 0 CHECK (timeout >= 0)
      );
      CREATE TABLE pools (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL UNIQUE,
        load_balancer_id uuid NOT NULL REFERENCES load_balancers (id),
        lb_method text NOT NULL,
        protocol text NOT NULL DEFAULT 'TCP',
        admin_state_up boolean NOT NULL DEFAULT true,
        health_monitor_id uuid REFERENCES health_monitors (id),
        status text NOT NULL DEFAULT 'ACTIVE'
      );
      CREATE INDEX pools_load_balancer ON pools (load_balancer_id, seq);
      CREATE INDEX pools_health_monitor ON pools (health_monitor_id, seq);
    `,
  },
  {
    version: 2,
    name: "reference filter indexes",
    // Load balancers filtered by their router (?routerId=) read the index, in list order, instead
    // of every row (a pool's load balancer and health monitor have theirs above).
    sql: "CREATE INDEX IF NOT EXISTS load_balancers_router_seq ON load_balancers (router_id, seq);",
  },
  {
    version: 3,
    name: "pool members and vips",
    // Both belong to one pool; the foreign keys neither cascade nor clear: a pool's delete (and a
    // load balancer's) takes them itself, announcing each. A VIP is read with its pool's load
    // balancer, which it follows.
    sql: `
      CREATE TABLE pool_members (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL UNIQUE,
        pool_id uuid NOT NULL REFERENCES pools (id),
        address text NOT NULL,
        protocol_port integer NOT NULL DEFAULT 0 CHECK (protocol_port BETWEEN 0 AND 65535),
        weight integer NOT NULL DEFAULT 1 CHECK (weight >= 1),
        admin_state_up boolean NOT NULL DEFAULT true,
        status text NOT NULL DEFAULT 'ACTIVE'
      );
      CREATE INDEX pool_members_pool_seq ON pool_members (pool_id, seq);
      CREATE TABLE vips (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL UNIQUE,
        pool_id uuid NOT NULL REFERENCES pools (id),
        address text NOT NULL,
        protocol_port integer NOT NULL DEFAULT 0 CHECK (protocol_port BETWEEN 0 AND 65535),
        session_persistence text,
        admin_state_up boolean NOT NULL DEFAULT true
      );
      CREATE INDEX vips_pool_seq ON vips (pool_id, seq);
      CREATE VIEW vips_now AS SELECT v.*, p.load_balancer_id FROM vips v JOIN pools p ON p.id = v.pool_id;
    `,
  },
];
