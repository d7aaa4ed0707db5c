// Each service as its own Postgres role and its own NATS user (docs/security.md, "Databases" and
// "Bus"): a role reads no other service's schema; a NATS user publishes only its own domain's
// subjects. The whole stack runs on a nats-server of its own with deploy/nats.conf, and works.
import { roleName, serviceDatabaseUrl } from "@vnm/kit";
import { directService, startNatsServer, type NatsServer } from "@vnm/kit/testing";
import { connect, JSONCodec, type NatsConnection } from "nats";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEPS, dropSchema, httpClient, openFeed, Stack, startProcess, waitFor } from "../harness/harness.ts";

// The subject prefix the checked-in configuration grants (a server of its own: no other stack on it).
const stack = new Stack({ VNM_BUS_PREFIX: "vnm" });
let nats: NatsServer;
let gw = "";
const http = httpClient(() => gw, "application/json", () => stack.adminToken);
const TRACE = { "content-type": "application/vnd.org.service.TraceRequest-v1+json" };

beforeAll(async () => {
  nats = await startNatsServer();
  stack.natsUrl = nats.url;
  stack.natsPasswords = nats.passwords;
  await stack.startServices();
  gw = await stack.startGateway();
}, 120_000);

afterAll(async () => {
  await stack.stop();
  await nats.stop();
});

/** A Postgres session as `domain`'s role (its DATABASE_URL); `fn`'s result, or the error it threw. */
async function asRole<T>(domain: string, fn: (db: pg.Client) => Promise<T>): Promise<T | { code?: string; message: string }> {
  const db = new pg.Client({ connectionString: (await stack.serviceEnv(domain))["DATABASE_URL"] });
  await db.connect();
  try {
    return await fn(db);
  } catch (err) {
    return err as { code?: string; message: string };
  } finally {
    await db.end();
  }
}

/** A connection as the NATS user `user` of the stack's server. */
function natsAs(user: string): Promise<NatsConnection> {
  return connect({ servers: nats.url, user, pass: nats.passwords[`VNM_NATS_PASSWORD_${user.toUpperCase()}`], inboxPrefix: `_INBOX_${user}` });
}

describe("databases: a role per service", () => {
  it("the tunnel service's role may not read the identity service's users", async () => {
    const r = await asRole("tunnel", (db) => db.query(`SELECT password_hash FROM ${stack.schema("identity")}.users`));
    expect(r).toMatchObject({ code: "42501" });
    expect((r as Error).message).toMatch(/permission denied for schema/);
  });

  it("nor create anything outside its schema", async () => {
    const r = await asRole("tunnel", (db) => db.query("CREATE TABLE public.vnm_least_privilege (id int)"));
    expect(r).toMatchObject({ code: "42501" });
  });

  it("the identity service's role owns its schema's tables and reads them", async () => {
    const admin = new pg.Client({ connectionString: DEPS.databaseUrl });
    await admin.connect();
    const owners = await admin.query("SELECT DISTINCT tableowner FROM pg_tables WHERE schemaname = $1", [stack.schema("identity")]);
    await admin.end();
    const role = new URL((await stack.serviceEnv("identity"))["DATABASE_URL"]!).username;
    expect(owners.rows).toEqual([{ tableowner: role }]);
    const users = await asRole("identity", (db) => db.query(`SELECT name FROM ${stack.schema("identity")}.users`));
    expect((users as pg.QueryResult).rows).toContainEqual({ name: "admin" });
  });
});

describe("the migrations step: <domain> --migrate-only with VNM_DATABASE_ADMIN_URL", () => {
  it("makes the role and its schema, migrates and exits; the service then runs with its own URL only", async () => {
    const schema = `qos_m${stack.id}`;
    const role = { role: roleName(DEPS.databaseUrl, schema), password: `p${stack.id}` };
    const own = serviceDatabaseUrl(DEPS.databaseUrl, role);
    try {
      const step = startProcess("services/qos/src/main.ts", { DATABASE_URL: own, VNM_DATABASE_ADMIN_URL: DEPS.databaseUrl, VNM_DB_SCHEMA: schema, NATS_URL: "" }, [], ["--migrate-only"]);
      const code = await new Promise((resolve) => step.child.once("exit", resolve));
      expect(code, step.output.join("")).toBe(0);
      const qos = await directService("qos", { DATABASE_URL: own, VNM_DB_SCHEMA: schema });
      const created = await qos.call("vnm.qos.v1.QosPolicyService", "CreateQosPolicy", { qosPolicy: { name: "gold" } });
      const listed = await qos.call("vnm.qos.v1.QosPolicyService", "ListQosPolicies", {});
      await qos.stop({ keepSchema: true });
      expect(created.err).toBeNull();
      expect(JSON.stringify(listed.res)).toContain("gold");
      const admin = new pg.Client({ connectionString: DEPS.databaseUrl });
      await admin.connect();
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
      await admin.query(`DROP ROLE IF EXISTS ${role.role}`);
      await admin.end();
    } finally {
      await dropSchema(schema).catch(() => {});
    }
  });
});

describe("bus: a NATS user per part", () => {
  it("refuses a connection without a user", async () => {
    await expect(connect({ servers: nats.url })).rejects.toThrow(/Authorization Violation/i);
  });

  it("a change flows from the bridge service to the gateway's /events through the server", async () => {
    const feed = await openFeed(gw, stack.adminToken);
    const b = await http("POST", "/bridges", { name: "watched" });
    expect(b.status).toBe(201);
    // A service still connecting to NATS (a loaded machine) publishes once it is connected.
    await waitFor("the bridge's event", async () => feed.events.some((e) => e.data.id === b.json.id), 30_000);
    await feed.close();
    expect(feed.events.find((e) => e.data.id === b.json.id)).toMatchObject({ event: "created", data: { kind: "Bridge" } });
   }, 60_000);

  it("the tunnel user may not announce a bridge deleted: the bridge's traces stay; the real deletion takes them", async () => {
    const bridge = (await http("POST", "/bridges", { name: "traced" })).json;
    const trace = await http("POST", "/traces", { name: "t", deviceType: "BRIDGE", deviceId: bridge.id, condition: {} }, TRACE);
    expect(trace.status).toBe(201);
    const tunnel = await natsAs("tunnel");
    const forged = tunnel.jetstream().publish("vnm.bridge.Bridge.deleted", JSONCodec().encode({ id: bridge.id }), { timeout: 2_000 });
    await expect(forged).rejects.toThrow();
    await tunnel.close();
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await http("GET", `/traces/${trace.json.id}`)).status).toBe(200);
    // The bridge service's own announcement (its user's subjects) reaches the tracing service's consumer.
    expect((await http("DELETE", bridge.uri)).status).toBe(204);
    await waitFor("the trace gone with its bridge", async () => (await http("GET", `/traces/${trace.json.id}`)).status === 404, 15_000);
  });

  it("the routing service's consumer of host deletions runs as its user: the tunnel user's announcement of a host deleted clears its bindings", async () => {
    const zone = (await http("POST", "/tunnel_zones", { name: "least-privilege", type: "vxlan" })).json;
    const host = (await http("POST", "/hosts", { name: "bound" })).json;
    expect((await http("POST", `/tunnel_zones/${zone.id}/hosts`, { hostId: host.id, ipAddress: "10.0.0.1" })).status).toBe(201);
    const bridge = (await http("POST", "/bridges", { name: "with a bound port" })).json;
    const port = (await http("POST", `/bridges/${bridge.id}/ports`, {})).json;
    expect((await http("POST", `/hosts/${host.id}/ports`, { portId: port.id, interfaceName: "eth0" })).status).toBe(201);
    // What the tunnel service announces when a host goes while a binding of it is being made
    // (the race its delete's check cannot close), published with the tunnel service's own rights.
    const tunnel = await natsAs("tunnel");
    await tunnel.jetstream().publish("vnm.tunnel.Host.deleted", JSONCodec().encode({ kind: "Host", event: "deleted", id: host.id, path: `/hosts/${host.id}`, tenantId: null }), { timeout: 5_000 });
    await tunnel.close();
    await waitFor("the port unbound", async () => (await http("GET", port.uri)).json?.hostId === null, 30_000);
    const gateway = await natsAs("gateway");
    await expect((await gateway.jetstreamManager()).consumers.delete("VNM", "routing-host-deletions")).rejects.toThrow();
    await gateway.close();
  }, 60_000);

  it("the gateway may not touch the tracing service's durable consumer", async () => {
    const gateway = await natsAs("gateway");
    const jsm = await gateway.jetstreamManager();
    await expect(jsm.consumers.delete("VNM", "tracing-bridge-deletions")).rejects.toThrow();
    await gateway.close();
    const admin = await stack.natsAdmin();
    expect((await (await admin.jetstreamManager()).consumers.info("VNM", "tracing-bridge-deletions")).name).toBe("tracing-bridge-deletions");
    await admin.close();
  });

  it("a domain's user may publish its own subjects only, and subscribe only where it consumes", async () => {
    const bridge = await natsAs("bridge");
    const refused: string[] = [];
    void (async () => {
      for await (const s of bridge.status()) if (s.permissionContext) refused.push(`${s.permissionContext.operation} ${s.permissionContext.subject}`);
    })();
    const watcher = await stack.natsAdmin();
    const heard: string[] = [];
    watcher.subscribe("vnm.*.Probe.*", { callback: (_e, m) => heard.push(m.subject) });
    await watcher.flush();
    bridge.subscribe("vnm.>");
    bridge.publish("vnm.tunnel.Probe.deleted", JSONCodec().encode({ id: "forged" }));
    bridge.publish("vnm.bridge.Probe.created", JSONCodec().encode({ id: "own" }));
    await bridge.flush();
    await waitFor("the bridge user's own subject heard", async () => heard.includes("vnm.bridge.Probe.created") && refused.length >= 2, 5_000);
    await bridge.close();
    await watcher.close();
    expect(heard).toEqual(["vnm.bridge.Probe.created"]);
    expect(refused.sort()).toEqual(["publish vnm.tunnel.Probe.deleted", "subscription vnm.>"]);
  });
});

describe("the stack under these rights", () => {
  it("audits a write on the audit stream (the gateway's own subjects)", async () => {
    const watcher = await stack.natsAdmin();
    const audited: string[] = [];
    watcher.subscribe("vnm-audit.>", { callback: (_e, m) => audited.push(m.subject) });
    await watcher.flush();
    expect((await http("POST", "/bridges", { name: "audited" })).status).toBe(201);
    await waitFor("the write's audit record", async () => audited.length > 0, 15_000);
    await watcher.close();
    expect(audited).toContain("vnm-audit.bridge.Bridge");
  });

  it("no part was refused anything it does: the only refusals are the ones these tests provoked", () => {
    const refusals = stack.logLines().filter((l) => /permission|authorization violation/i.test(JSON.stringify(l)));
    expect(refusals).toEqual([]);
    const violations = nats.proc.output
      .join("")
      .split("\n")
      .map((l) => l.slice(l.search(/(Publish|Subscription) Violation|authentication error/)))
      .filter((l) => /^(Publish|Subscription) Violation|^authentication error/.test(l));
    expect(violations.sort()).toEqual([
      'Publish Violation - User "bridge", Subject "vnm.tunnel.Probe.deleted"',
      'Publish Violation - User "gateway", Subject "$JS.API.CONSUMER.DELETE.VNM.routing-host-deletions"',
      'Publish Violation - User "gateway", Subject "$JS.API.CONSUMER.DELETE.VNM.tracing-bridge-deletions"',
      'Publish Violation - User "tunnel", Subject "vnm.bridge.Bridge.deleted"',
      'Subscription Violation - User "bridge", Subject "vnm.>", SID 1',
      'authentication error - User ""',
    ]);
  });
});
