// The first admin: created at start-up, its generated password printed once (never logged as
// a field), and the service refuses calls without a valid token except the password check.
import { randomBytes } from "node:crypto";
import * as grpc from "@grpc/grpc-js";
import { directService, waitFor } from "@vnm/kit/testing";
import { expect, it } from "vitest";

const AUTH = "vnm.identity.v1.AuthService";

it("generates the first admin's password, prints it once, and it logs in", async () => {
  const env = { VNM_DB_SCHEMA: `identity_b${randomBytes(4).toString("hex")}`, VNM_ADMIN_USER: "root", VNM_ADMIN_PASSWORD: "" };
  const first = await directService("identity", env);
  // The line crosses a pipe of its own: it may reach the test a moment after the service answers.
  await waitFor("the generated password", async () => first.output().includes("Generated password"), 5_000).catch(() => {});
  const m = /Generated password for admin user 'root': (\S+)/.exec(first.output());
  expect(m).not.toBeNull();
  const password = m![1]!;
  // The structured log lines never carry it.
  for (const line of first.output().split("\n").filter((l) => l.startsWith("{"))) expect(line).not.toContain(password);
  const ok = await first.call(AUTH, "Authenticate", { name: "root", password }, null);
  expect(ok.err).toBeNull();
  expect(ok.res).toMatchObject({ name: "root", roles: ["admin"] });
  const bad = await first.call(AUTH, "Authenticate", { name: "root", password: "nope" }, null);
  expect(bad.err?.code).toBe(grpc.status.UNAUTHENTICATED);
  await first.stop({ keepSchema: true });

  const second = await directService("identity", env);
  expect(second.output()).not.toContain("Generated password");
  expect((await second.call(AUTH, "Authenticate", { name: "root", password }, null)).err).toBeNull();
  await second.stop({ keepSchema: true });

  // VNM_ADMIN_PASSWORD, when given, becomes the admin's password.
  const third = await directService("identity", { ...env, VNM_ADMIN_PASSWORD: "chosen-password" });
  expect((await third.call(AUTH, "Authenticate", { name: "root", password: "chosen-password" }, null)).err).toBeNull();
  // Users cannot be listed without a token.
  const anon = await third.call("vnm.identity.v1.UserService", "ListUsers", {}, null);
  expect(anon.err?.code).toBe(grpc.status.UNAUTHENTICATED);
  await third.stop();
});
