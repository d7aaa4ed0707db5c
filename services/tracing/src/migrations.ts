import type { Migration } from "@vnm/kit";

export const migrations: Migration[] = [
  {
    version: 1,
    name: "trace requests",
    sql: `
      CREATE TABLE trace_requests (
        id uuid PRIMARY KEY,
        seq bigserial NOT NULL UNIQUE,
        name text NOT NULL,
        device_type text NOT NULL,
        device_id uuid NOT NULL,
        -- The client's JSON object as the gateway passed it on: text keeps key order and digits.
        condition text NOT NULL CHECK (condition::json IS NOT NULL),
        enabled boolean NOT NULL,
        creation_timestamp_ms bigint NOT NULL,
        trace_limit bigint NOT NULL
      );
      CREATE INDEX trace_requests_device ON trace_requests (device_type, device_id);
      -- Bridges the bridge service announced deleted: a trace created for one while its
      -- deletion is handled must not survive it.
      CREATE TABLE deleted_bridges (
        id uuid PRIMARY KEY,
        at timestamptz NOT NULL DEFAULT now()
      );
    `,
  },
  {
    version: 2,
    name: "list filter indexes",
    // A list filtered by these columns reads the index, in list order, instead of every row.
    sql: `
      CREATE INDEX trace_requests_name_seq ON trace_requests (name, seq);
    `,
  },
  {
    version: 3,
    name: "reference filter indexes",
    // Traces filtered by their device (?deviceId=, with or without ?deviceType=) read the index,
    // in list order, instead of every row: trace_requests_device starts with the type.
    sql: "CREATE INDEX IF NOT EXISTS trace_requests_device_id_seq ON trace_requests (device_id, seq);",
  },
  {
    version: 4,
    name: "tombstones' age index",
    // A tombstone's burial prunes those older than a day (kit/tombstones.ts): without an index on
    // their age that prune read every tombstone, so each deletion cost as much as all before it.
    sql: `
      CREATE INDEX deleted_bridges_at ON deleted_bridges (at);
    `,
  },
  {
    version: 5,
    name: "routers' and ports' tombstones",
    // Routers and ports the routing service announced deleted (devices.ts), as deleted_bridges.
    sql: `
      CREATE TABLE deleted_routers (
        id uuid PRIMARY KEY,
        at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX deleted_routers_at ON deleted_routers (at);
      CREATE TABLE deleted_ports (
        id uuid PRIMARY KEY,
        at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX deleted_ports_at ON deleted_ports (at);
    `,
  },
];
