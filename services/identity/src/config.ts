// The identity service's own configuration: every variable it reads beyond the kit's (database,
// bus, gRPC), in one schema. A bad value stops the service at start, naming every such variable.
import { loadConfig, optional, parseNonNegativeInt, parsePositiveInt } from "@vnm/kit";
import { redisUrl } from "@vnm/kit/limits";

/** VNM_SERVICE_CLIENTS: `name:sha256hex(credential)`, comma-separated; each part's name and the SHA-256 of its credential. */
export function parseServiceClients(value: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const entry of value.split(",").map((e) => e.trim()).filter((e) => e !== "")) {
    const m = /^([a-z][a-z0-9-]*):([0-9a-f]{64})$/.exec(entry);
    if (!m) throw new Error(`"${entry.split(":")[0]}" is not name:sha256hex`);
    out.set(m[1]!, Buffer.from(m[2]!, "hex"));
  }
  return out;
}

export function identityConfig(env: NodeJS.ProcessEnv) {
  return loadConfig(
    {
      redisUrl: { env: "REDIS_URL", default: "", parse: redisUrl },
      busPrefix: { env: "VNM_BUS_PREFIX", default: "vnm" },
      serviceClients: { env: "VNM_SERVICE_CLIENTS", default: "", parse: parseServiceClients, secret: true },
      signingKeyDays: { env: "VNM_SIGNING_KEY_DAYS", default: "30", parse: parsePositiveInt },
      tokenTtlSeconds: { env: "VNM_TOKEN_TTL_SECONDS", default: "3600", parse: parsePositiveInt },
      loginFailureLimit: { env: "VNM_LOGIN_FAILURE_LIMIT", default: "10", parse: parseNonNegativeInt },
      loginWindowSeconds: { env: "VNM_LOGIN_WINDOW_SECONDS", default: "300", parse: parsePositiveInt },
      hashConcurrency: { env: "VNM_HASH_CONCURRENCY", default: "2", parse: parsePositiveInt },
      hashQueue: { env: "VNM_HASH_QUEUE", default: "32", parse: parsePositiveInt },
      adminUser: { env: "VNM_ADMIN_USER", default: "admin" },
      adminPassword: { env: "VNM_ADMIN_PASSWORD", default: "", parse: optional },
    },
    env,
  );
}

export type IdentityConfig = ReturnType<typeof identityConfig>;
