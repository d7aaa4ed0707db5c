// The identity service's variables are one schema: a bad value stops it at start, and the error
// names every bad variable at once (never the value of VNM_SERVICE_CLIENTS).
import { directService } from "@vnm/kit/testing";
import { expect, it } from "vitest";

it("does not start with bad values of its variables, naming each of them at once", async () => {
  const clients = `gateway:${"ab".repeat(32)},bridge:nothex`;
  const started = directService("identity", {
    VNM_HASH_QUEUE: "0",
    VNM_HASH_CONCURRENCY: "two",
    VNM_LOGIN_WINDOW_SECONDS: "soon",
    VNM_LOGIN_FAILURE_LIMIT: "-1",
    VNM_SIGNING_KEY_DAYS: "-1",
    VNM_TOKEN_TTL_SECONDS: "1.5",
    VNM_SERVICE_CLIENTS: clients,
  });
  const err: Error = await started.then(
    async (s) => {
      await s.stop();
      return new Error("started");
    },
    (e: Error) => e,
  );
  expect(err.message).toContain("identity did not start");
  for (const v of [
    'VNM_HASH_QUEUE="0" is not valid',
    'VNM_HASH_CONCURRENCY="two" is not valid',
    'VNM_LOGIN_WINDOW_SECONDS="soon" is not valid',
    'VNM_LOGIN_FAILURE_LIMIT="-1" is not valid',
    'VNM_SIGNING_KEY_DAYS="-1" is not valid',
    'VNM_TOKEN_TTL_SECONDS="1.5" is not valid',
    'VNM_SERVICE_CLIENTS is not valid: "bridge" is not name:sha256hex',
  ]) {
    expect(err.message).toContain(v);
  }
  expect(err.message).not.toContain("ab".repeat(32));
});
