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
];
