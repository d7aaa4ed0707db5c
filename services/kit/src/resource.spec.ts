// What a Resource decides before and after its SQL: a body judged (400 naming each field) before
// anything is written, rows rendered as the proto's fields, paths and change notifications, the
// 404 and 409 messages a client reads, pages, and the registry children find their parent in.
// The Resource takes its Queryable as a parameter; here it is a stand-in that records each
// statement and answers what the test says. The SQL itself is covered by the services' suites
// against Postgres.
import { status } from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import type { Change } from "./changes.ts";
import type { Queryable } from "./db.ts";
import { ApiError } from "./errors.ts";
import { loadCatalog } from "./catalog.ts";
import { PROTO_DIR } from "./proto.ts";
import { columnOf, mergeHandlers, pageOf, Resource, ResourceSet } from "./resource.ts";
import { Rules } from "./rules.ts";

type Row = Record<string, unknown>;

/** A Queryable answering each statement with `answer(sql, params)`; `sql` lists what was sent. */
function queryable(answer: (sql: string, params: unknown[]) => Row[] | Error = () => []) {
  const sql: string[] = [];
  const q = {
    query: async (text: string, params: unknown[] = []) => {
      sql.push(text);
      const rows = answer(text, params);
      if (rows instanceof Error) throw rows;
      return { rows, rowCount: rows.length };
    },
  } as unknown as Queryable;
  return { q, sql };
}

/** The INSERT's columns and values, answered back as the stored row (what RETURNING * gives). */
const echoInsert = (text: string, params: unknown[]): Row[] => {
  const cols = /\(([^)]*)\) VALUES/.exec(text)?.[1]?.split(", ") ?? [];
  return [Object.fromEntries(cols.map((c, i) => [c, params[i]]))];
};

const uniqueViolation = (constraint: string) => Object.assign(new Error("duplicate key"), { code: "23505", constraint });

async function refusal(p: Promise<unknown>): Promise<ApiError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, "the call was refused").toBeInstanceOf(ApiError);
  return err as ApiError;
}

const bridges = new Resource({
  proto: "vnm.bridge.v1.Bridge",
  table: "bridges",
  tenantColumn: "tenant_id",
  defaults: { adminStateUp: true },
  conflict: (b, constraint) => `constraint ${constraint} holds ${String(b.name)}`,
});

type Subnet6Row = { bridge_id: string; prefix: string; length: number };
const subnets6 = new Resource({
  proto: "vnm.bridge.v1.DhcpV6Subnet",
  table: "dhcp6_subnets",
  parentColumn: "bridge_id",
  key: { read: (req) => (req["subnetAddr"] === "2001:db8::_64" ? { prefix: "2001:db8::", length: 64 } : undefined) },
  render: (r: Subnet6Row) => ({ bridgeId: r.bridge_id, prefix: r.prefix, prefixLength: r.length }),
});

const catalog = loadCatalog();
const kinds = new ResourceSet(catalog, [bridges, subnets6], undefined, Rules.load(PROTO_DIR));

const ID = "3f2a3c3e-8a57-4d0e-9a43-6c1f7b0e2d11";

describe("a body is judged before anything is written", () => {
  it("each offending field is a violation of a 400, and no statement is sent", async () => {
    const { q, sql } = queryable();
    const err = await refusal(bridges.create(q, () => {}, { bridge: { name: "n".repeat(256), inboundFilterId: "nope", id: "not-a-uuid" } }));
    expect(err.code).toBe(status.INVALID_ARGUMENT);
    expect(err.violations.map((v) => v.property).sort()).toEqual(["id", "inboundFilterId", "name"]);
    expect(sql).toEqual([]);
  });

  it("a malformed id in the path names nothing: 404 without a query", async () => {
    const { q, sql } = queryable();
    const err = await refusal(bridges.locate(q, { id: "nope" }));
    expect([err.code, err.message]).toEqual([status.NOT_FOUND, "There is no Bridge with ID nope."]);
    expect(sql).toEqual([]);
  });
});

describe("a create", () => {
  it("writes each writable field to its snake_case column, defaults what the body leaves out, answers the stored row and announces it", async () => {
    const { q } = queryable(echoInsert);
    const changes: Change[] = [];
    const made = await bridges.create(q, (c) => changes.push(c), { bridge: { id: ID, name: "blue", tenantId: "acme" } });
    expect(made).toEqual({ id: ID, name: "blue", tenantId: "acme", adminStateUp: true });
    expect(changes).toEqual([{ kind: "Bridge", event: "created", id: ID, path: `/bridges/${ID}`, tenantId: "acme" }]);
  });

  it("names a new item with a fresh UUID when the body has none", async () => {
    const { q } = queryable(echoInsert);
    const made = await bridges.create(q, () => {}, { bridge: {} });
    expect(made["id"]).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it("turns a taken id into a 409 naming it, and another unique rule into the kind's own message", async () => {
    const taken = queryable(() => uniqueViolation("bridges_pkey"));
    const err = await refusal(bridges.create(taken.q, () => {}, { bridge: { id: ID } }));
    expect([err.code, err.message]).toEqual([status.ALREADY_EXISTS, `A Bridge with ID ${ID} already exists.`]);
    const named = queryable(() => uniqueViolation("bridges_name_key"));
    expect((await refusal(bridges.create(named.q, () => {}, { bridge: { name: "blue" } }))).message).toBe("constraint bridges_name_key holds blue");
    const plain = queryable((sql) => (sql.startsWith("INSERT") ? uniqueViolation("dhcp6_subnets_prefix_key") : [{ id: ID, tenant_id: "acme" }]));
    const subnetErr = await refusal(subnets6.create(plain.q, () => {}, { bridgeId: ID, subnet: { prefix: "2001:db8::", prefixLength: 64 } }));
    expect(subnetErr.message).toBe("A DhcpV6Subnet with these values already exists.");
  });
});

describe("rendering", () => {
  it("shows the proto's fields from their columns, leaves out nulls, links and write-only fields", () => {
    const users = new Resource({ proto: "vnm.identity.v1.User", table: "users" });
    new ResourceSet(catalog, [users]);
    const shown = users.toMessage({ id: ID, name: "ann", password: "scrypt$secret", tenant_id: null, roles: ["admin"], uri: "x" });
    expect(shown).toEqual({ id: ID, name: "ann", roles: ["admin"] });
    expect(columnOf("adminStateUp")).toBe("admin_state_up");
  });

  it("a nested item's path and notification come from its render and its parent's row (the tenant is the bridge's)", () => {
    const row: Subnet6Row = { bridge_id: ID, prefix: "2001:db8::", length: 64 };
    const bridgeRow = { id: ID, tenant_id: "acme" };
    expect(subnets6.pathOf(row, [bridgeRow])).toBe(`/bridges/${ID}/dhcpV6/2001:db8::_64`);
    expect(subnets6.change("deleted", row, [bridgeRow])).toEqual({
      kind: "DhcpV6Subnet",
      event: "deleted",
      id: "2001:db8::_64",
      path: `/bridges/${ID}/dhcpV6/2001:db8::_64`,
      tenantId: "acme",
    });
  });

  it("a kind declared under a parent without a parentColumn is refused at start-up", () => {
    const macPorts = new Resource({ proto: "vnm.bridge.v1.MacPort", table: "mac_ports" });
    expect(() => new ResourceSet(catalog, [macPorts])).toThrow(/lives under bridge\.Bridge: declare its parentColumn/);
  });
});

describe("not found under a parent", () => {
  it("a missing parent answers the parent's 404; a missing child names both", async () => {
    const none = queryable();
    const err = await refusal(subnets6.locate(none.q, { bridgeId: ID, subnetAddr: "2001:db8::_64" }));
    expect(err.message).toBe(`There is no Bridge with ID ${ID}.`);
    const onlyBridge = queryable((sql) => (sql.includes("FROM bridges") ? [{ id: ID, tenant_id: "acme" }] : []));
    const child = await refusal(subnets6.locate(onlyBridge.q, { bridgeId: ID, subnetAddr: "2001:db8::_64" }));
    expect([child.code, child.message]).toEqual([status.NOT_FOUND, `Bridge ${ID} has no DhcpV6Subnet 2001:db8::_64.`]);
    const malformed = await refusal(subnets6.locate(onlyBridge.q, { bridgeId: ID, subnetAddr: "garbage" }));
    expect(malformed.message).toBe(`Bridge ${ID} has no DhcpV6Subnet garbage.`);
  });
});

describe("pages", () => {
  it("limit and marker are checked (400 naming them)", () => {
    expect(pageOf({ limit: "10", marker: ID.toUpperCase() })).toEqual({ limit: 10, marker: ID });
    expect(pageOf({})).toEqual({});
    for (const bad of [{ limit: "0" }, { limit: "1001" }, { limit: "1.5" }, { limit: "ten" }]) {
      expect(() => pageOf(bad), JSON.stringify(bad)).toThrow(expect.objectContaining({ violations: [{ property: "limit", message: "must be between 1 and 1000" }] }));
    }
    expect(() => pageOf({ marker: "x" })).toThrow(expect.objectContaining({ violations: [expect.objectContaining({ property: "marker" })] }));
  });

  it("a page with more behind it names its last item as the next marker; the last page does not", async () => {
    const rows = [1, 2, 3].map((n) => ({ id: `${n}`, name: `b${n}`, seq: n }));
    const three = queryable(() => rows);
    expect(await bridges.list(three.q, {}, { limit: 2 })).toEqual({ items: [{ id: "1", name: "b1" }, { id: "2", name: "b2" }], next_marker: "2" });
    const two = queryable(() => rows.slice(0, 2));
    expect(await bridges.list(two.q, {}, { limit: 2 })).toEqual({ items: [{ id: "1", name: "b1" }, { id: "2", name: "b2" }] });
  });

  it("a marker that is not an item of this list is a 400, not an empty page", async () => {
    const { q } = queryable();
    const err = await refusal(bridges.list(q, { tenant_id: "acme" }, { limit: 2, marker: ID }));
    expect(err.violations).toEqual([{ property: "marker", message: "must be the id of an item of this list" }]);
  });
});

describe("a service's set of kinds", () => {
  it("finds the Resource the service declared for a proto message, and says which is missing", () => {
    expect(kinds.of("vnm.bridge.v1.Bridge")).toBe(bridges);
    expect(subnets6.parent).toBe(bridges);
    expect(() => kinds.of("vnm.tunnel.v1.Vtep")).toThrow("no Resource of this service declares vnm.tunnel.v1.Vtep");
  });

  it("a kind whose parent the service does not declare says so when it needs it", () => {
    const orphan = new Resource({ proto: "vnm.bridge.v1.DhcpV6Subnet", table: "dhcp6_subnets", parentColumn: "bridge_id" });
    new ResourceSet(catalog, [orphan]);
    expect(() => orphan.parent).toThrow("bridge.DhcpV6Subnet lives under bridge.Bridge, which this service does not declare");
  });

  it("a Resource no service has started has no catalog entry to answer from", () => {
    const loose = new Resource({ proto: "vnm.bridge.v1.Bridge", table: "bridges" });
    expect(() => loose.name).toThrow("vnm.bridge.v1.Bridge is not part of a started service");
  });

  it("refuses handlers served twice", () => {
    const h = async () => ({});
    expect(mergeHandlers({ S: { A: h } }, { S: { B: h } })["S"]).toEqual({ A: h, B: h });
    expect(() => mergeHandlers({ S: { A: h } }, { S: { A: h } })).toThrow("S: A served twice");
  });
});
