// The password policy of NIST SP 800-63B (12 characters or more, counted in code
// points; not a common password of @zxcvbn-ts/language-common's list, nor two of them one after
// the other; not easy to guess by zxcvbn's estimate, told the user's name and tenant; no
// composition rules), for new users, password changes and the first admin. Only the identity
// service runs: /users needs nothing else.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dropSchema, expectError, httpClient, Stack, startProcess } from "@vnm/e2e/harness";

const stack = new Stack();
let gw = "";
const http = httpClient(() => gw, "application/json", () => stack.adminToken);
const user = (password: string) => ({ name: `u-${randomBytes(4).toString("hex")}`, password, tenantId: "T", roles: ["tenant_user"] });

beforeAll(async () => {
  await stack.startServices("identity");
  gw = await stack.startGateway({}, false);
});

afterAll(async () => {
  await stack.stop();
});

describe("password policy", () => {
  it.each([
    ["5 characters", "abcde"],
    ["11 characters", "abcdefghijk"],
    ["6 code points in 12 UTF-16 units", "😀😀😀😀😀😀"],
    ["a common password", "qwerty123456"],
    ["a common password in other case", "1QAZ2WSX3EDC"],
    ["two common passwords one after the other", "password123456"],
  ])("refuses %s with 400 naming password", async (_what, password) => {
    const r = await http("POST", "/users", user(password));
    expectError(r, 400);
    expect(r.json.violations).toEqual([{ property: "password", message: expect.any(String) }]);
  });

  it("accepts 12 code points of any kind, no composition rules", async () => {
    expect((await http("POST", "/users", user("ñandú rojo pampa"))).status).toBe(201);
    expect((await http("POST", "/users", user("violin cactus zebra"))).status).toBe(201);
  });

  it.each([
    ["one character repeated", () => user("aaaaaaaaaaaa")],
    ["one character repeated, longer", () => user("aaaaaaaaaaaaaaaa")],
    ["the user's own name twice", () => {
      const u = user("");
      return { ...u, password: `${u.name}${u.name}` };
    }],
    ["the user's own name twice, another case", () => {
      const u = user("");
      return { ...u, password: `${u.name}-${u.name.toUpperCase()}` };
    }],
  ])("refuses %s with 400 naming password, saying in plain words that it is easy to guess", async (_what, make) => {
    const body = make();
    const r = await http("POST", "/users", body);
    expectError(r, 400);
    expect(r.json.violations).toEqual([{ property: "password", message: expect.stringMatching(/^must be harder to guess: .+\./) }]);
  });

  it("refuses the tenant's name thrice for a user of that tenant, and takes it from a user of another", async () => {
    const tenantId = `acme${randomBytes(3).toString("hex")}`;
    const r = await http("POST", "/users", { ...user(tenantId.repeat(3)), tenantId });
    expectError(r, 400);
    expect(r.json.violations).toEqual([{ property: "password", message: expect.stringMatching(/^must be harder to guess: .+\./) }]);
    expect((await http("POST", "/users", user(tenantId.repeat(3)))).status).toBe(201);
  });

  it("refuses a password change to a short or common one, keeps the old password", async () => {
    const u = user("first-good-password");
    const c = await http("POST", "/users", u);
    expect(c.status).toBe(201);
    for (const password of ["short", "administrator", `${u.name}${u.name}`]) {
      const r = await http("PUT", c.json.uri, { ...u, password });
      expectError(r, 400);
      expect(r.json.violations).toEqual([{ property: "password", message: expect.any(String) }]);
    }
    expect(await stack.login(gw, u.name, u.password)).toBeTruthy();
  });

  it("the identity service does not start with a weak VNM_ADMIN_PASSWORD, and says so", async () => {
    const schema = `identity_w${randomBytes(4).toString("hex")}`;
    const proc = startProcess("services/identity/src/main.ts", stack.env({ GRPC_PORT: "0", VNM_DB_SCHEMA: schema, VNM_ADMIN_PASSWORD: "admin" }));
    // Ended either way, so a service that does start (the defect) does not outlive the test.
    const exited = new Promise<number | null>((resolve) => proc.child.once("exit", resolve));
    const code = await Promise.race([exited, new Promise<"running">((r) => setTimeout(() => r("running"), 20_000))]);
    await proc.stop();
    await dropSchema(schema);
    expect(code).not.toBe("running");
    expect(code).not.toBe(0);
    expect(proc.output.join("")).toContain("VNM_ADMIN_PASSWORD must be at least 12 characters long");
  });
});
