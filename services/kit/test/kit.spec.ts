// The shared kit against the machine's real Postgres and NATS.
import { randomBytes } from "node:crypto";
import { connect, type NatsConnection } from "nats";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../src/log.ts";
import { natsBus, streamName } from "../src/bus.ts";
import { commitWithChanges, OutboxRelay } from "../src/changes.ts";
import { ConfigError, loadConfig, parsePort } from "../src/config.ts";
import { createPool, migrate, OUTBOX_MIGRATION } from "../src/db.ts";

const DATABASE_URL = process.env["DATABASE_URL"] || "postgres://postgres@127.0.0.1:5432/test";
const NATS_URL = process.env["NATS_URL"] || "nats://127.0.0.1:4222";
const id = `k${randomBytes(4).toString("hex")}`;
const schema = `kit_${id}`;
const log = createLogger({ test: "kit" }, "error");
let pool: pg.Pool;

beforeAll(() => {
  pool = createPool(DATABASE_URL, schema);
});
afterAll(async () => {
  await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await pool.end();
});

describe("loadConfig", () => {
  it("names every missing or bad variable at once", () => {
    expect(() =>
      loadConfig({ a: { env: "VNM_T_A" }, b: { env: "VNM_T_B", parse: parsePort }, c: { env: "VNM_T_C", default: "x" } }, { VNM_T_B: "99999" }),
    ).toThrow(/VNM_T_A is not set.*VNM_T_B="99999" is not valid/);
    expect(() => loadConfig({ a: { env: "VNM_T_A" } }, {})).toThrow(ConfigError);
    expect(loadConfig({ p: { env: "P", parse: parsePort }, d: { env: "D", default: "x" } }, { P: "80" })).toEqual({ p: 80, d: "x" });
  });
});

describe("migrate", () => {
  it("applies each migration once when several replicas start at once", async () => {
    const migrations = [
      OUTBOX_MIGRATION,
      { version: 1, name: "t", sql: "CREATE TABLE t (id int PRIMARY KEY)" },
      { version: 2, name: "t2", sql: "ALTER TABLE t ADD COLUMN v text" },
    ];
    const pools = [0, 1, 2, 3].map(() => createPool(DATABASE_URL, schema, 2));
    await Promise.all(pools.map((p) => migrate(p, schema, migrations)));
    await Promise.all(pools.map((p) => p.end()));
    const applied = await pool.query(`SELECT version FROM ${schema}.schema_migrations ORDER BY version`);
    expect(applied.rows.map((r) => r.version)).toEqual([0, 1, 2]);
    await pool.query(`INSERT INTO ${schema}.t (id, v) VALUES (1, 'ok')`);
  });
});

describe("outbox relay", () => {
  let nc: NatsConnection;
  const prefix = `vnm${id}`;
  beforeAll(async () => {
    nc = await connect({ servers: NATS_URL });
  });
  afterAll(async () => {
    const jsm = await nc.jetstreamManager();
    await jsm.streams.delete(streamName(prefix)).catch(() => {});
    await nc.close();
  });

  it("publishes committed changes in order, once, and empties the outbox", async () => {
    const bus = natsBus({ url: NATS_URL, prefix, log, name: "kit-test" });
    const got: string[] = [];
    bus.subscribe((m) => got.push(m.subject));
    await new Promise<void>((resolve) => {
      const t = setInterval(() => {
        if (bus.state() === "connected") {
          clearInterval(t);
          resolve();
        }
      }, 20);
    });
    const c = await pool.connect();
    await c.query(`SET search_path = ${schema}`);
    await c.query("BEGIN");
    await commitWithChanges(c, prefix, "demo", [
      { kind: "Thing", event: "created", id: "1", path: "/things/1", tenantId: null },
      { kind: "Thing", event: "updated", id: "1", path: "/things/1", tenantId: null },
      { kind: "Thing", event: "deleted", id: "1", path: "/things/1", tenantId: null },
    ]);
    c.release();
    // Two relays (two replicas) drain the same outbox.
    const relays = [new OutboxRelay(pool, schema, bus, log), new OutboxRelay(pool, schema, bus, log)];
    await Promise.all(relays.map((r) => r.flush()));
    await new Promise((r) => setTimeout(r, 300));
    expect(got).toEqual([`${prefix}.demo.Thing.created`, `${prefix}.demo.Thing.updated`, `${prefix}.demo.Thing.deleted`]);
    expect((await pool.query(`SELECT count(*)::int AS n FROM ${schema}.outbox`)).rows[0].n).toBe(0);

    // A re-sent message (a relay that crashed after publishing, before deleting) is dropped.
    const jsm = await nc.jetstreamManager();
    const before = (await jsm.streams.info(streamName(prefix))).state.messages;
    await bus.publish(`${prefix}.demo.Thing.created`, { again: true }, `${schema}-1`);
    expect((await jsm.streams.info(streamName(prefix))).state.messages).toBe(before);
    await bus.close();
  });

  it("commits outbox rows as literals exactly, quotes and backslashes included", async () => {
    const c = await pool.connect();
    await c.query(`SET search_path = ${schema}`);
    await c.query("BEGIN");
    const tricky = "it's a \\ test \"quoted\" \u00e9";
    await commitWithChanges(c, prefix, "demo", [{ kind: "Thing", event: "created", id: tricky, path: `/things/${tricky}`, tenantId: "t'1" }]);
    const row = (await c.query("SELECT subject, payload FROM outbox ORDER BY id DESC LIMIT 1")).rows[0];
    c.release();
    expect(row.subject).toBe(`${prefix}.demo.Thing.created`);
    expect(row.payload).toMatchObject({ id: tricky, path: `/things/${tricky}`, tenantId: "t'1", domain: "demo" });
    await pool.query(`DELETE FROM ${schema}.outbox`);
  });

  it("keeps changes while NATS is unreachable and leaves them for later", async () => {
    const bus = natsBus({ url: "nats://127.0.0.1:1", prefix, log, name: "kit-test-down" });
    const c = await pool.connect();
    await c.query(`SET search_path = ${schema}`);
    await c.query("BEGIN");
    await commitWithChanges(c, prefix, "demo", [{ kind: "Thing", event: "created", id: "2", path: "/things/2", tenantId: null }]);
    c.release();
    await expect(new OutboxRelay(pool, schema, bus, log).flush()).rejects.toThrow(/not connected/);
    expect((await pool.query(`SELECT count(*)::int AS n FROM ${schema}.outbox`)).rows[0].n).toBe(1);
    await bus.close();
  });
});
