// The identity service's users reached directly over gRPC (no gateway): each field against
// identity.proto's rules, and what no field rule states (the password policy, a tenant for
// tenant roles, the last administrator) in the service's own words.
import { randomBytes } from "node:crypto";
import * as grpc from "@grpc/grpc-js";
import { type DirectService, directService } from "@vnm/kit/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const USERS = "vnm.identity.v1.UserService";
const PASSWORD = "violin cactus zebra";
let svc: DirectService;

beforeAll(async () => {
  svc = await directService("identity");
});

afterAll(async () => {
  await svc.stop();
});

const unique = () => `u-${randomBytes(4).toString("hex")}`;
const createUser = (user: Record<string, unknown>) => svc.call(USERS, "CreateUser", { user: { name: unique(), password: PASSWORD, tenantId: "acme", roles: ["tenant_user"], ...user } });

describe("each field against identity.proto's rules", () => {
  it("a name of 1 to 255 characters of text without ':', required", async () => {
    const cases: [unknown, string][] = [
      [undefined, "value is required"],
      ["", "must be at least 1 characters"],
      ["x".repeat(256), "must be at most 255 characters"],
      ["ann:lee", "contains substring `:`"],
      ["ann\u0000", "must be valid Unicode text without NUL characters"],
    ];
    for (const [name, message] of cases) {
      const r = await createUser({ name });
      expect(r.err?.code, String(name)).toBe(grpc.status.INVALID_ARGUMENT);
      expect(svc.violations(r), String(name)).toEqual([{ property: "name", message }]);
    }
    // 255 code points, however many UTF-16 units.
    expect((await createUser({ name: "😀".repeat(255) })).err).toBeNull();
  });

  it("a password of at most 1,024 characters of text (before the policy judges it), a tenant of at most 255", async () => {
    expect(svc.violations(await createUser({ password: `${PASSWORD} `.repeat(60) }))).toEqual([{ property: "password", message: "must be at most 1024 characters" }]);
    expect(svc.violations(await createUser({ password: `${PASSWORD}\u0000` }))).toEqual([{ property: "password", message: "must be valid Unicode text without NUL characters" }]);
    expect(svc.violations(await createUser({ tenantId: "t".repeat(256) }))).toEqual([{ property: "tenantId", message: "must be at most 255 characters" }]);
    expect((await createUser({ password: `${PASSWORD} `.repeat(51).slice(0, 1024), tenantId: "t".repeat(255) })).err).toBeNull();
  });

  it("1 to 3 roles, each admin, tenant_admin or tenant_user, at most once", async () => {
    const cases: [unknown, string][] = [
      [undefined, "must contain at least 1 item(s)"],
      [[], "must contain at least 1 item(s)"],
      [["king"], "must be in list [admin, tenant_admin, tenant_user]"],
      [["tenant_user", "Admin"], "must be in list [admin, tenant_admin, tenant_user]"],
      [["tenant_user", "tenant_user"], "repeated value must contain unique items"],
      [["tenant_user", "tenant_admin", "admin", "tenant_user"], "must contain no more than 3 item(s)"],
    ];
    for (const [roles, message] of cases) {
      const r = await createUser({ roles });
      expect(r.err?.code, JSON.stringify(roles)).toBe(grpc.status.INVALID_ARGUMENT);
      expect(svc.violations(r), JSON.stringify(roles)).toEqual([{ property: "roles", message }]);
    }
    const all = await createUser({ roles: ["tenant_user", "tenant_admin", "admin"] });
    expect(all.err).toBeNull();
    expect(all.res.roles).toEqual(["tenant_user", "tenant_admin", "admin"]);
  });

  it("a UUID id, kept in lower case", async () => {
    expect(svc.violations(await createUser({ id: "user-1" }))).toEqual([{ property: "id", message: "must be a valid UUID" }]);
    const r = await createUser({ id: "0000000A-0000-4000-8000-00000000ABCD" });
    expect(r.res.id).toBe("0000000a-0000-4000-8000-00000000abcd");
    expect((await svc.call(USERS, "GetUser", { id: "0000000a-0000-4000-8000-00000000abcd" })).res.name).toBe(r.res.name);
  });
});

describe("what no field rule states", () => {
  it("a user created needs a password; the policy judges it with the user's name and tenant; tenant roles need a tenant: each named, in one answer", async () => {
    expect(svc.violations(await createUser({ password: undefined }))).toEqual([{ property: "password", message: "may not be null" }]);
    const both = await createUser({ password: "short", tenantId: undefined });
    expect(svc.violations(both)).toEqual([
      { property: "password", message: "must be at least 12 characters long" },
      { property: "tenantId", message: "is required for tenant roles" },
    ]);
    const name = unique();
    const own = await createUser({ name, password: `${name}${name}` });
    expect(svc.violations(own)).toEqual([{ property: "password", message: expect.stringMatching(/^must be harder to guess: /) }]);
    // An administrator needs no tenant.
    expect((await createUser({ roles: ["admin"], tenantId: undefined })).err).toBeNull();
  });

  it("a PUT without a password keeps it; the last administrator keeps the admin role (409)", async () => {
    const u = await createUser({ roles: ["tenant_admin"] });
    const put = await svc.call(USERS, "UpdateUser", { id: u.res.id, user: { name: u.res.name, tenantId: "acme", roles: ["tenant_user"] } });
    expect(put.err).toBeNull();
    const login = await svc.call("vnm.identity.v1.AuthService", "Authenticate", { name: u.res.name, password: PASSWORD }, null);
    expect(login.res.roles).toEqual(["tenant_user"]);
    // Every administrator but the one this test is logged in as deleted: it is the last.
    const adminsNow = async () => ((await svc.call(USERS, "ListUsers", {})).res.items as { id: string; name: string; roles: string[] }[]).filter((x) => x.roles.includes("admin"));
    for (const a of await adminsNow()) await svc.call(USERS, "DeleteUser", { id: a.id });
    const left = await adminsNow();
    expect(left).toHaveLength(1);
    const last = left[0]!;
    const demote = await svc.call(USERS, "UpdateUser", { id: last.id, user: { name: last.name, tenantId: "acme", roles: ["tenant_admin"] } });
    expect(demote.err?.code).toBe(grpc.status.ALREADY_EXISTS);
    expect(demote.err?.details).toBe("The last administrator cannot give up the admin role.");
  });
});
