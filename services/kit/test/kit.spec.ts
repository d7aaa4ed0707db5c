// The shared kit against the machine's real Postgres and NATS.
import { randomBytes, randomUUID } from "node:crypto";
import * as grpc from "@grpc/grpc-js";
import { connect, type NatsConnection } from "nats";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../src/log.ts";
import { CONSUME_BATCH, localBus, natsBus, streamName } from "../src/bus.ts";
import { type Change, commitStatements, messageId, OutboxRelay, withOutboxRows } from "../src/changes.ts";
import { ConfigError, loadConfig, parsePort } from "../src/config.ts";
import { createPool, inTransaction, migrate, OUTBOX_MIGRATION, preparedReads, withLiterals } from "../src/db.ts";
import { ApiError } from "../src/errors.ts";
import { Store } from "../src/service.ts";
import { deleteStreams, startProcess, waitFor } from "../src/testing.ts";
import { DRY_RUN_KEY } from "../src/upstream.ts";

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

/** The first word of each message the client sends from now on ("BEGIN;", "COMMIT", ...). */
function messagesSent(c: pg.PoolClient): string[] {
  const sent: string[] = [];
  const query = c.query.bind(c);
  (c as unknown as { query: (...a: unknown[]) => unknown }).query = (...a: unknown[]) => {
    sent.push(typeof a[0] === "string" ? a[0].split(/\s/, 1)[0]! : "?");
    return (query as (...a: unknown[]) => unknown)(...a);
  };
  return sent;
}

describe("inTransaction", () => {
  beforeAll(async () => {
    await pool.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await pool.query(`CREATE TABLE ${schema}.tx (id uuid PRIMARY KEY, name text, n integer, ok boolean, ids uuid[], doc jsonb, at timestamptz)`);
  });

  it("sends BEGIN with the first statement and stores its values exactly as parameters would", async () => {
    const row = {
      id: "7d3c4b0e-2a4f-4d8e-9a51-6f1f0c1d2e3f",
      name: "it's a \\ $1 test \"quoted\" \u00e9 -- /* not a comment */",
      n: 42,
      ok: false,
      ids: ["0b6c1f0a-1c2d-4e5f-8a9b-0c1d2e3f4a5b"],
      doc: JSON.stringify([{ a: "x'y" }]),
      at: new Date("2026-01-02T03:04:05.678Z"),
    };
    const c = await pool.connect();
    const sent = messagesSent(c);
    try {
      const back = await inTransaction(c, async (q) => {
        const ins = await q.query(`INSERT INTO ${schema}.tx (id, name, n, ok, ids, doc, at) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`, Object.values(row));
        return ins.rows[0];
      });
      expect(back).toEqual({ ...row, doc: [{ a: "x'y" }] });
      // BEGIN travelled with the INSERT: two messages, not three.
      expect(sent).toEqual(["BEGIN;", "COMMIT"]);
    } finally {
      c.release();
    }
    const stored = (await pool.query(`SELECT * FROM ${schema}.tx WHERE id = $1`, [row.id])).rows[0];
    expect(stored).toEqual({ ...row, doc: [{ a: "x'y" }] });
  });

  it("rolls the whole transaction back when a later statement fails", async () => {
    const c = await pool.connect();
    const id = "11111111-2222-4333-8444-555555555555";
    try {
      await expect(
        inTransaction(c, async (q) => {
          await q.query(`INSERT INTO ${schema}.tx (id, name) VALUES ($1, $2)`, [id, "first"]);
          await q.query(`INSERT INTO ${schema}.tx (id, name) VALUES ($1, $2)`, [id, "again"]);
        }),
      ).rejects.toMatchObject({ code: "23505" });
    } finally {
      c.release();
    }
    expect((await pool.query(`SELECT count(*)::int AS n FROM ${schema}.tx WHERE id = $1`, [id])).rows[0].n).toBe(0);
  });

  it("ends a transaction with its last statement and the commit in one message", async () => {
    const c = await pool.connect();
    const sent = messagesSent(c);
    const [a, b] = ["21111111-2222-4333-8444-555555555555", "31111111-2222-4333-8444-555555555555"];
    try {
      const back = await inTransaction(c, async (_q, end) => {
        const r = await end.last(`INSERT INTO ${schema}.tx (id, name) VALUES ($1, $2) RETURNING id, name`, [a, "it's last"], () => `INSERT INTO ${schema}.tx (id, name) VALUES ('${b}', 'end'); COMMIT`);
        return r.rows;
      });
      // The statement's own rows come back, not the BEGIN's or the COMMIT's.
      expect(back).toEqual([{ id: a, name: "it's last" }]);
      expect(sent).toEqual(["BEGIN;"]);
    } finally {
      c.release();
    }
    expect((await pool.query(`SELECT name FROM ${schema}.tx WHERE id = ANY($1) ORDER BY name`, [[a, b]])).rows).toEqual([{ name: "end" }, { name: "it's last" }]);
  });

  it("leaves nothing of a transaction whose last statement fails, and the client usable", async () => {
    const c = await pool.connect();
    const [a, b] = ["41111111-2222-4333-8444-555555555555", "51111111-2222-4333-8444-555555555555"];
    try {
      await expect(
        inTransaction(c, async (q, end) => {
          await q.query(`INSERT INTO ${schema}.tx (id, name) VALUES ($1, $2)`, [a, "first"]);
          await end.last(`INSERT INTO ${schema}.tx (id, name) VALUES ($1, $2)`, [a, "again"], () => `INSERT INTO ${schema}.tx (id, name) VALUES ('${b}', 'end'); COMMIT`);
        }),
      ).rejects.toMatchObject({ code: "23505" });
      expect((await c.query("SELECT 1 AS ok")).rows).toEqual([{ ok: 1 }]);
    } finally {
      c.release();
    }
    expect((await pool.query(`SELECT count(*)::int AS n FROM ${schema}.tx WHERE id = ANY($1)`, [[a, b]])).rows[0].n).toBe(0);
  });

  it("writes parameters as literals only where every $n is one", () => {
    expect(withLiterals("SELECT * FROM t WHERE id = $1 AND n = $2", ["a'b", 3])).toBe("SELECT * FROM t WHERE id = 'a''b' AND n = '3'");
    expect(withLiterals("SELECT $1", [null])).toBe("SELECT NULL");
    expect(withLiterals("SELECT '$1' || $1", ["x"])).toBeUndefined();
    expect(withLiterals("SELECT $f$ $1 $f$", ["x"])).toBeUndefined();
    expect(withLiterals("SELECT $2", ["x"])).toBeUndefined();
    expect(withLiterals("SELECT $1", [Buffer.from("x")])).toBeUndefined();
  });
});

describe("preparedReads", () => {
  it("reads through a prepared statement, and still reads after the table changed under it", async () => {
    const one = createPool(DATABASE_URL, schema, 1);
    try {
      await one.query(`CREATE TABLE IF NOT EXISTS ${schema}.pr (id int PRIMARY KEY, a text)`);
      await one.query(`INSERT INTO ${schema}.pr VALUES (1, 'x')`);
      const reads = preparedReads(one);
      const sql = `SELECT * FROM ${schema}.pr WHERE id = $1`;
      expect((await reads.query(sql, [1])).rows).toEqual([{ id: 1, a: "x" }]);
      expect((await one.query("SELECT count(*)::int AS n FROM pg_prepared_statements")).rows[0].n).toBe(1);
      // Another replica's migration adds a column: the plan prepared on this connection no longer fits.
      await pool.query(`ALTER TABLE ${schema}.pr ADD COLUMN b text DEFAULT 'y'`);
      expect((await reads.query(sql, [1])).rows).toEqual([{ id: 1, a: "x", b: "y" }]);
    } finally {
      await one.end();
    }
  });
});

describe("local bus", () => {
  it("hands a subscriber only the subjects it named", async () => {
    const bus = localBus(`local${id}`);
    const all: string[] = [];
    const users: string[] = [];
    bus.subscribe([">"], (m) => all.push(m.subject));
    bus.subscribe(["identity.User.*"], (m) => users.push(m.subject));
    await bus.publish(`local${id}.bridge.Bridge.created`, {}, "1");
    await bus.publish(`local${id}.identity.User.updated`, {}, "2");
    expect(all).toEqual([`local${id}.bridge.Bridge.created`, `local${id}.identity.User.updated`]);
    expect(users).toEqual([`local${id}.identity.User.updated`]);
    await bus.close();
  });

  it("hands a follower (a feed) the change subjects only, and a consumer of a subject below one (a tenant move) that one", async () => {
    const prefix = `local${id}m`;
    const bus = localBus(prefix);
    const followed: string[] = [];
    const consumed: string[] = [];
    const stop = await bus.follow(undefined, (_seq, m) => void followed.push(m.subject));
    bus.consume("moves", ["demo.Thing.updated.tenant"], async (m) => void consumed.push(m.subject));
    await bus.publish(`${prefix}.demo.Thing.updated`, {}, "1");
    await bus.publish(`${prefix}.demo.Thing.updated.tenant`, {}, "2");
    await waitFor("the move consumed", async () => consumed.length === 1);
    expect(followed).toEqual([`${prefix}.demo.Thing.updated`]);
    expect(consumed).toEqual([`${prefix}.demo.Thing.updated.tenant`]);
    stop();
    await bus.close();
  });
});

describe("outbox relay", () => {
  let nc: NatsConnection;
  const prefix = `vnm${id}`;
  beforeAll(async () => {
    nc = await connect({ servers: NATS_URL });
  });
  afterAll(async () => {
    await deleteStreams(nc, prefix);
    await nc.close();
  });

  const connected = (bus: ReturnType<typeof natsBus>) => waitFor("the bus connected", async () => bus.state() === "connected");

  it("publishes committed changes in order, once, and empties the outbox", async () => {
    const bus = natsBus({ url: NATS_URL, prefix, log, name: "kit-test" });
    const got: string[] = [];
    bus.subscribe([">"], (m) => got.push(m.subject));
    // A narrower subscriber hears only what it named (the broker filters).
    const deletions: string[] = [];
    bus.subscribe(["demo.*.deleted"], (m) => deletions.push(m.subject));
    await connected(bus);
    const c = await pool.connect();
    await c.query(`SET search_path = ${schema}`);
    await c.query("BEGIN");
    await c.query(commitStatements(c, prefix, "demo", [
      { kind: "Thing", event: "created", id: "1", path: "/things/1", tenantId: null },
      { kind: "Thing", event: "updated", id: "1", path: "/things/1", tenantId: null },
      { kind: "Thing", event: "deleted", id: "1", path: "/things/1", tenantId: null },
    ]));
    c.release();
    // Two relays (two replicas) drain the same outbox.
    const relays = [new OutboxRelay(pool, schema, bus, log), new OutboxRelay(pool, schema, bus, log)];
    await Promise.all(relays.map((r) => r.flush()));
    await new Promise((r) => setTimeout(r, 300));
    expect(got).toEqual([`${prefix}.demo.Thing.created`, `${prefix}.demo.Thing.updated`, `${prefix}.demo.Thing.deleted`]);
    expect(deletions).toEqual([`${prefix}.demo.Thing.deleted`]);
    expect((await pool.query(`SELECT count(*)::int AS n FROM ${schema}.outbox`)).rows[0].n).toBe(0);

    // A re-sent message (a relay that crashed after publishing, before deleting) is dropped.
    const jsm = await nc.jetstreamManager();
    const { state } = await jsm.streams.info(streamName(prefix));
    const first = await jsm.streams.getMessage(streamName(prefix), { seq: state.first_seq });
    const row = first.json<Record<string, unknown>>();
    await bus.publish(first.subject, row, messageId(schema, "1", row));
    expect((await jsm.streams.info(streamName(prefix))).state.messages).toBe(state.messages);
    await bus.close();
  });

  it("a row id handed out again with another change (a promoted standby's sequence) is announced, not dropped as a repeat", async () => {
    const bus = natsBus({ url: NATS_URL, prefix, log, name: "kit-test" });
    await connected(bus);
    const announce = async (thing: string) => {
      const c = await pool.connect();
      await c.query(`SET search_path = ${schema}`);
      await c.query("BEGIN");
      await c.query(commitStatements(c, prefix, "demo", [{ kind: "Thing", event: "created", id: thing, path: `/things/${thing}`, tenantId: null }]));
      c.release();
      await new OutboxRelay(pool, schema, bus, log).flush();
    };
    const jsm = await nc.jetstreamManager();
    await announce("a");
    const { last_seq } = (await jsm.streams.info(streamName(prefix))).state;
    // The next change gets the id the last one had, as on a new primary that never saw it.
    await pool.query(`SELECT setval('${schema}.outbox_id_seq', (SELECT last_value FROM ${schema}.outbox_id_seq) - 1)`);
    await announce("b");
    const after = (await jsm.streams.info(streamName(prefix))).state.last_seq;
    expect(after).toBe(last_seq + 1);
    expect((await jsm.streams.getMessage(streamName(prefix), { seq: after })).json<{ id: string }>().id).toBe("b");
    await bus.close();
  });

  it("a durable consumer closed while it handles a change acknowledges it first: its next instance gets the next change at once", async () => {
    const consumer = `kit-closing-${id}`;
    const first = natsBus({ url: NATS_URL, prefix, log, name: "kit-closing-1" });
    await connected(first);
    let release!: () => void;
    const handled = new Promise<void>((started) => {
      first.consume(consumer, ["closing.>"], async () => {
        started();
        await new Promise<void>((r) => {
          release = r;
        });
      });
    });
    await first.publish(`${prefix}.closing.Thing.deleted`, { n: 1 }, `closing-1-${id}`);
    await handled;
    const closing = first.close();
    setTimeout(() => release(), 200);
    await closing;
    const second = natsBus({ url: NATS_URL, prefix, log, name: "kit-closing-2" });
    await connected(second);
    const got: unknown[] = [];
    second.consume(consumer, ["closing.>"], async (m) => {
      got.push(m.data);
    });
    await second.publish(`${prefix}.closing.Thing.deleted`, { n: 2 }, `closing-2-${id}`);
    // Left unacknowledged, the first change would come again after the consumer's ack wait
    // (30 s), and the second only after it.
    await waitFor("the second change", async () => got.some((d) => (d as { n?: number }).n === 2), 5_000);
    expect(got).toEqual([{ n: 2 }]);
    await second.close();
  });

  it("a batch consumer takes what is waiting in batches, each handed over once when it succeeds and again when it fails", async () => {
    const consumer = `kit-batches-${id}`;
    const bus = natsBus({ url: NATS_URL, prefix, log, name: "kit-batches" });
    await connected(bus);
    // Published before the consumer exists: it starts from the stream's history, all waiting.
    for (let n = 1; n <= 150; n++) await bus.publish(`${prefix}.batches.Thing.deleted`, { n }, `batches-${n}-${id}`);
    const batches: number[][] = [];
    let failed = false;
    bus.consumeBatches(consumer, ["batches.>"], async (msgs) => {
      const ns = msgs.map((m) => (m.data as { n: number }).n);
      // The first batch holding 100 fails once: all of it comes again.
      if (!failed && ns.includes(100)) {
        failed = true;
        throw new Error("once");
      }
      batches.push(ns);
    });
    await waitFor("every change handled", async () => batches.flat().length >= 150, 20_000);
    const handled = batches.flat();
    expect(new Set(handled).size).toBe(150);
    expect(handled).toHaveLength(150);
    expect(failed).toBe(true);
    expect(Math.max(...batches.map((b) => b.length))).toBeGreaterThan(1);
    expect(Math.max(...batches.map((b) => b.length))).toBeLessThanOrEqual(CONSUME_BATCH);
    expect(batches.length).toBeLessThan(150 / 2);
    // Acknowledged: nothing more comes.
    await new Promise((r) => setTimeout(r, 1_500));
    expect(batches.flat()).toHaveLength(150);
    await bus.close();
  });

  it("a batch consumer closed while it handles a batch acknowledges it, and gives back what was delivered behind it at once", async () => {
    const consumer = `kit-batch-closing-${id}`;
    const first = natsBus({ url: NATS_URL, prefix, log, name: "kit-batch-closing-1" });
    await connected(first);
    let release!: () => void;
    const handled: number[] = [];
    const started = new Promise<void>((begun) => {
      first.consumeBatches(consumer, ["bclosing.>"], async (msgs) => {
        handled.push(...msgs.map((m) => (m.data as { n: number }).n));
        begun();
        await new Promise<void>((r) => {
          release = r;
        });
      });
    });
    await first.publish(`${prefix}.bclosing.Thing.deleted`, { n: 1 }, `bclosing-1-${id}`);
    await started;
    // Delivered to the first instance while it is busy: unacknowledged, they would wait out the ack wait (5 s).
    for (let n = 2; n <= 5; n++) await first.publish(`${prefix}.bclosing.Thing.deleted`, { n }, `bclosing-${n}-${id}`);
    await new Promise((r) => setTimeout(r, 300));
    const closing = first.close();
    setTimeout(() => release(), 200);
    await closing;
    expect(handled).toEqual([1]);
    const second = natsBus({ url: NATS_URL, prefix, log, name: "kit-batch-closing-2" });
    await connected(second);
    const got: number[] = [];
    const t0 = Date.now();
    second.consumeBatches(consumer, ["bclosing.>"], async (msgs) => {
      got.push(...msgs.map((m) => (m.data as { n: number }).n));
    });
    await waitFor("the changes behind the batch", async () => got.length >= 4, 10_000);
    expect(got.sort()).toEqual([2, 3, 4, 5]);
    expect(Date.now() - t0).toBeLessThan(3_000);
    await second.close();
  });

  it("a part killed while it handles a change holds its consumer back one ack wait (5 s), not the server's 30 s", async () => {
    const consumer = `kit-killed-${id}`;
    const dying = startProcess("services/kit/test/fixtures/killed-consumer.ts", {}, [], [NATS_URL, prefix, consumer]);
    const bus = natsBus({ url: NATS_URL, prefix, log, name: "kit-killed" });
    await connected(bus);
    await bus.publish(`${prefix}.killed.Thing.deleted`, { n: 1 }, `killed-1-${id}`);
    await waitFor("the change being handled", async () => dying.output.join("").includes("handling"), 20_000);
    await dying.stop("SIGKILL");
    const killedAt = Date.now();
    const got: unknown[] = [];
    bus.consume(consumer, ["killed.>"], async (m) => {
      got.push(m.data);
    });
    await bus.publish(`${prefix}.killed.Thing.deleted`, { n: 2 }, `killed-2-${id}`);
    await waitFor("both changes", async () => got.length === 2, 20_000);
    expect(got).toEqual([{ n: 1 }, { n: 2 }]);
    expect(Date.now() - killedAt).toBeLessThan(12_000);
    await bus.close();
  });

  it("commits outbox rows as literals exactly, quotes and backslashes included", async () => {
    const c = await pool.connect();
    await c.query(`SET search_path = ${schema}`);
    await c.query("BEGIN");
    const tricky = "it's a \\ test \"quoted\" \u00e9";
    await c.query(commitStatements(c, prefix, "demo", [{ kind: "Thing", event: "created", id: tricky, path: `/things/${tricky}`, tenantId: "t'1" }]));
    const row = (await c.query("SELECT subject, payload FROM outbox ORDER BY id DESC LIMIT 1")).rows[0];
    c.release();
    expect(row.subject).toBe(`${prefix}.demo.Thing.created`);
    expect(row.payload).toMatchObject({ id: tricky, path: `/things/${tricky}`, tenantId: "t'1", domain: "demo" });
    await pool.query(`DELETE FROM ${schema}.outbox`);
  });

  it("writes a statement nothing ran before and its outbox rows as one statement of their own: both, or neither", async () => {
    const a = "61111111-2222-4333-8444-555555555555";
    const change: Change = { kind: "Thing", event: "created", id: a, path: `/things/${a}`, tenantId: "t'1" };
    const insert = `INSERT INTO ${schema}.tx (id, name) VALUES ($1, $2) RETURNING id, name`;
    const outboxRows = async () => (await pool.query(`SELECT payload FROM ${schema}.outbox WHERE payload->>'id' = $1`, [a])).rows;
    const create = async (name: string) => {
      const c = await pool.connect();
      const sent = messagesSent(c);
      try {
        const r = await inTransaction(c, (_q, end) => end.last(insert, [a, name], () => "COMMIT", () => withOutboxRows(insert, [a, name], prefix, "demo", [change], "req-1")));
        return { rows: r.rows, sent };
      } finally {
        c.release();
      }
    };
    const first = await create("alone");
    expect(first.rows).toEqual([{ id: a, name: "alone" }]);
    // One named statement (a query object): no BEGIN, no COMMIT.
    expect(first.sent).toEqual(["?"]);
    expect(await outboxRows()).toEqual([{ payload: expect.objectContaining({ ...change, domain: "demo", requestId: "req-1" }) }]);
    // The same id again: refused, and its change not announced either.
    await expect(create("again")).rejects.toMatchObject({ code: "23505" });
    expect(await outboxRows()).toHaveLength(1);
    expect((await pool.query(`SELECT name FROM ${schema}.tx WHERE id = $1`, [a])).rows).toEqual([{ name: "alone" }]);
    // A statement that returns nothing cannot be one.
    expect(withOutboxRows(`INSERT INTO tx (id) VALUES ($1)`, [a], prefix, "demo", [change])).toBeUndefined();
    await pool.query(`DELETE FROM ${schema}.outbox`);
  });

  it("publishes a change after a quiet spell at once, and the changes of a busy spell together, one spacing after the last round began", async () => {
    const bus = localBus(`spaced${id}`);
    const heard: { id: string; at: number }[] = [];
    bus.subscribe([">"], (m) => heard.push({ id: (m.data as Change).id, at: Date.now() }));
    // A round takes one connection from the pool.
    let rounds = 0;
    const connect = () => {
      rounds++;
      return pool.connect();
    };
    const counted = new Proxy(pool, { get: (t, k) => (k === "connect" ? connect : Reflect.get(t, k)) });
    const spacing = 1000;
    const relay = new OutboxRelay(counted, schema, bus, log, 60_000, spacing);
    const c = await pool.connect();
    const write = async (thing: string) => {
      await c.query(`BEGIN; ${commitStatements(c, `spaced${id}`, "demo", [{ kind: "Thing", event: "created", id: thing, path: `/things/${thing}`, tenantId: null }])}`);
      relay.kick();
    };
    const heardAll = async (n: number) => {
      while (heard.length < n) await new Promise((r) => setTimeout(r, 10));
    };
    try {
      const first = Date.now();
      await write("a");
      await heardAll(1);
      // Within the spacing of the first round: both wait for the next one, and share it.
      await write("b");
      await write("c");
      await heardAll(3);
      expect(heard.map((h) => h.id)).toEqual(["a", "b", "c"]);
      expect(heard[0]!.at - first).toBeLessThan(spacing);
      expect(heard[1]!.at - first).toBeGreaterThanOrEqual(spacing - 5);
      expect(rounds).toBe(2);
    } finally {
      c.release();
      await relay.stop();
      await bus.close();
    }
  });

  it("keeps changes while NATS is unreachable and leaves them for later", async () => {
    const bus = natsBus({ url: "nats://127.0.0.1:1", prefix, log, name: "kit-test-down" });
    const c = await pool.connect();
    await c.query(`SET search_path = ${schema}`);
    await c.query("BEGIN");
    await c.query(commitStatements(c, prefix, "demo", [{ kind: "Thing", event: "created", id: "2", path: "/things/2", tenantId: null }]));
    c.release();
    await expect(new OutboxRelay(pool, schema, bus, log).flush()).rejects.toThrow(/not connected/);
    expect((await pool.query(`SELECT count(*)::int AS n FROM ${schema}.outbox`)).rows[0].n).toBe(1);
    await bus.close();
  });
});

describe("following the stream (a gateway's /events)", () => {
  let nc: NatsConnection;
  const prefix = `vnmf${id}`;
  // The process keeps its 5 newest messages for its followers: older ones, and a follower left
  // behind, come from a consumer of the follower's own.
  const bus = natsBus({ url: NATS_URL, prefix, log, name: "kit-follow", followRing: 5 });
  const publish = (n: number) => bus.publish(`${prefix}.demo.Thing.created`, { n }, `m${n}`);
  /** Follows after `after`, collecting each message's `n`; `hold` delays the handler of the first. */
  const follow = async (after: number | undefined, hold?: Promise<void>) => {
    const got: number[] = [];
    const stop = await bus.follow(after, async (_seq, msg) => {
      if (got.length === 0 && hold) await hold;
      got.push((msg.data as { n: number }).n);
    });
    return { got, stop };
  };
  beforeAll(async () => {
    nc = await connect({ servers: NATS_URL });
    await waitFor("the bus connected", async () => bus.state() === "connected");
    for (let n = 1; n <= 12; n++) await publish(n);
  });
  afterAll(async () => {
    await bus.close();
    await deleteStreams(nc, prefix);
    await nc.close();
  });

  it("delivers every message after the cursor, in order, whether the process still keeps it or not, then the new ones", async () => {
    const { first } = await bus.kept();
    const fromStart = await follow(first - 1);
    const fromKept = await follow(first - 1 + 9);
    const fromNow = await follow(undefined);
    await publish(13);
    const all = Array.from({ length: 13 }, (_, i) => i + 1);
    await waitFor("every follower at 13", async () => [fromStart, fromKept, fromNow].every((f) => f.got.at(-1) === 13));
    expect(fromStart.got).toEqual(all);
    expect(fromKept.got).toEqual(all.slice(9));
    expect(fromNow.got).toEqual([13]);
    for (const f of [fromStart, fromKept, fromNow]) f.stop();
  });

  it("delivers no subject below a change's (a tenant move announced again): a feed shows each change once", async () => {
    const fromNow = await follow(undefined);
    await bus.publish(`${prefix}.demo.Thing.updated.tenant`, { n: 50 }, "m50");
    await publish(51);
    await waitFor("the follower at 51", async () => fromNow.got.at(-1) === 51);
    expect(fromNow.got).toEqual([51]);
    fromNow.stop();
  });

  it("a follower left behind by what the process keeps misses nothing", async () => {
    const { last } = await bus.kept();
    let release!: () => void;
    const slow = await follow(last, new Promise<void>((r) => (release = r)));
    // Ten messages while its handler holds the first: the five kept are past what it was given.
    for (let n = 101; n <= 110; n++) await publish(n);
    release();
    await publish(111);
    await waitFor("the slow follower at 111", async () => slow.got.at(-1) === 111);
    expect(slow.got).toEqual(Array.from({ length: 11 }, (_, i) => 101 + i));
    slow.stop();
  });
});

describe("Store.tx dry run (DRY_RUN_KEY, the API's ?dryRun=All)", () => {
  const drySchema = `${schema}_dry`;
  let dryPool: pg.Pool;
  beforeAll(async () => {
    dryPool = createPool(DATABASE_URL, drySchema);
    await migrate(dryPool, drySchema, [
      OUTBOX_MIGRATION,
      { version: 1, name: "items", sql: "CREATE TABLE items (id uuid PRIMARY KEY, name text, CONSTRAINT items_name UNIQUE (name) DEFERRABLE INITIALLY DEFERRED)" },
    ]);
  });
  afterAll(async () => {
    await dryPool.query(`DROP SCHEMA IF EXISTS ${drySchema} CASCADE`);
    await dryPool.end();
  });

  const ctxOf = (dry: boolean) => {
    const metadata = new grpc.Metadata();
    if (dry) metadata.set(DRY_RUN_KEY, "All");
    return { changed: new Set<string>(), metadata };
  };
  const change = (id: string): Change => ({ kind: "Item", event: "created", id, path: `/items/${id}`, tenantId: null });
  const count = async (sql: string, params: unknown[] = []) => Number((await dryPool.query(sql, params)).rows[0].n);

  it("runs the write whole, its last statement too, and answers it, but stores, writes to the outbox and announces nothing", async () => {
    let commits = 0;
    const store = new Store(dryPool, "kt", "vnm", () => commits++);
    const write = (ctx: ReturnType<typeof ctxOf>, id: string) =>
      store.tx(ctx, async (q, emit, finish) => {
        await q.query("SELECT 1");
        emit(change(id));
        return (await finish("INSERT INTO items (id, name) VALUES ($1, $2) RETURNING *", [id, `n-${id}`])).rows[0];
      });
    const [dryId, realId] = [randomUUID(), randomUUID()];
    const dry = ctxOf(true);
    expect(await write(dry, dryId)).toEqual({ id: dryId, name: `n-${dryId}` });
    expect([...dry.changed]).toEqual([]);
    expect(commits).toBe(0);
    expect(await count("SELECT count(*) AS n FROM items WHERE id = $1", [dryId])).toBe(0);
    expect(await count("SELECT count(*) AS n FROM outbox")).toBe(0);
    // The same write for real: stored, in the outbox, announced.
    const real = ctxOf(false);
    expect(await write(real, realId)).toEqual({ id: realId, name: `n-${realId}` });
    expect([...real.changed]).toEqual(["kt.Item:created"]);
    expect(commits).toBe(1);
    expect(await count("SELECT count(*) AS n FROM items WHERE id = $1", [realId])).toBe(1);
    expect(await count("SELECT count(*) AS n FROM outbox")).toBe(1);
    // A write alone (no statement before its last): a dry run of it stores nothing either.
    const alone = randomUUID();
    await store.tx(ctxOf(true), async (_q, emit, finish) => {
      emit(change(alone));
      return finish("INSERT INTO items (id, name) VALUES ($1, $2) RETURNING *", [alone, `n-${alone}`]);
    });
    expect(await count("SELECT count(*) AS n FROM items WHERE id = $1", [alone])).toBe(0);
  });

  it("is refused for what only a commit would check (a deferred constraint), as the write would be", async () => {
    const store = new Store(dryPool, "kt", "vnm", () => {});
    const taken = (ctx: ReturnType<typeof ctxOf>) =>
      store.tx(ctx, async (q) => {
        await q.query("INSERT INTO items (id, name) VALUES ($1, 'same')", [randomUUID()]);
        await q.query("INSERT INTO items (id, name) VALUES ($1, 'same')", [randomUUID()]);
      });
    await expect(taken(ctxOf(false))).rejects.toMatchObject({ code: "23505" });
    await expect(taken(ctxOf(true))).rejects.toMatchObject({ code: "23505" });
    expect(await count("SELECT count(*) AS n FROM items WHERE name = 'same'")).toBe(0);
  });
});

describe("a write whose database connection is lost", () => {
  const sleeping = (stage: string) =>
    waitFor(`a backend asleep ${stage}`, async () => {
      const r = await pool.query("SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND wait_event = 'PgSleep'", [`vnm-${schema}`]);
      if (r.rowCount === 0) return false;
      await pool.query("SELECT pg_terminate_backend($1)", [r.rows[0].pid]);
      return true;
    });
  const failure = (p: Promise<unknown>) => p.then(() => ApiError.badRequest("it succeeded"), (err: unknown) => ApiError.from(err));

  it("while it commits is answered as perhaps applied; before, as the database being unavailable", async () => {
    const store = new Store(pool, "demo", `vnm${id}`, () => {});
    await pool.query(`CREATE TABLE ${schema}.slow_commit (v text)`);
    // Its commit takes long (a deferred trigger sleeps), so the connection can be lost during it.
    await pool.query(`CREATE FUNCTION ${schema}.sleep_at_commit() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN PERFORM pg_sleep(60); RETURN NULL; END'`);
    await pool.query(`CREATE CONSTRAINT TRIGGER slow AFTER INSERT ON ${schema}.slow_commit DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ${schema}.sleep_at_commit()`);

    const committing = failure(store.tx(undefined, (q) => q.query(`INSERT INTO ${schema}.slow_commit VALUES ('a')`)));
    await sleeping("in the commit");
    expect((await committing).message).toMatch(/may have been applied/);

    const working = failure(store.tx(undefined, (q) => q.query("SELECT pg_sleep(60)")));
    await sleeping("before the commit");
    const before = await working;
    expect(before.code).toBe(14);
    expect(before.message).toBe("The database is unavailable; try again later");
  });
});
