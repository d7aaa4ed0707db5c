// What the identity service issues and answers for every other part: users' tokens (after a
// password check, limited per user name and source), parts' service tokens for their client
// credentials (VNM_SERVICE_CLIENTS holds only hashes), the public keys, key rotation.
import { createHash, timingSafeEqual } from "node:crypto";
import type { Redis } from "ioredis";
import {
  ApiError,
  type Authority,
  type CallContext,
  type Handlers,
  isUuid,
  MAX_TOKEN_SECONDS,
  partIdentity,
  partOf,
  SERVICE_AUDIENCE,
  SERVICE_TOKEN_SECONDS,
  type ServiceContext,
  serviceTokenSource,
} from "@vnm/kit";
import { type LoginLimits, connectRedis, loginLimits } from "@vnm/kit/limits";
import type { JSONWebKeySet } from "jose";
import { type IdentityConfig, identityConfig } from "./config.ts";
import { type SigningKeys, signingKeys } from "./keys.ts";
import { setHashLimits } from "./passwords.ts";

export interface IdentityParts {
  config: IdentityConfig;
  keys: Promise<SigningKeys>;
  limits: LoginLimits;
  /** Each part's name and the SHA-256 of its credential. */
  clients: Map<string, Buffer>;
  /** A user token's life when the caller asks for none, and the longest one granted. */
  ttlSeconds: number;
  stop(): Promise<void>;
}

const parts = new WeakMap<ServiceContext["store"], IdentityParts>();

/** The service's configuration, keys, limits and clients, made once per running service. */
export function identityParts(svc: ServiceContext): IdentityParts {
  let p = parts.get(svc.store);
  if (p) return p;
  const config = identityConfig(svc.env);
  setHashLimits(config.hashConcurrency, config.hashQueue);
  const redis: Redis | undefined = config.redisUrl ? connectRedis(config.redisUrl) : undefined;
  const keys = signingKeys(svc.store, svc.log, config.signingKeyDays);
  keys.catch(() => {});
  p = {
    config,
    keys,
    // The same counters (and Redis keys) the gateway's /login used: one limit, whoever asks.
    limits: loginLimits(config.loginFailureLimit, config.loginWindowSeconds, redis, `${config.busPrefix}:login`),
    clients: config.serviceClients,
    ttlSeconds: Math.min(MAX_TOKEN_SECONDS, config.tokenTtlSeconds),
    async stop() {
      (await keys.catch(() => undefined))?.stop();
      redis?.disconnect();
    },
  };
  parts.set(svc.store, p);
  return p;
}

/** Identity answers for itself: its own keys, its own token signed here, generations from its table. */
export function localAuthority(svc: ServiceContext): Authority {
  const { keys } = identityParts(svc);
  const serviceToken = serviceTokenSource(async () => {
    const expires = Math.floor(Date.now() / 1000) + SERVICE_TOKEN_SECONDS;
    const token = await (await keys).sign(partIdentity("identity", expires), SERVICE_AUDIENCE);
    return { token, expires };
  });
  return {
    keys: async () => (await keys).published(),
    serviceToken,
    tokenState: (userId) => tokenState(svc.store, userId),
  };
}

/** A user's token generation and the ids of its tokens ended one at a time (not yet expired); undefined: no such user. */
export async function tokenState(store: Pick<ServiceContext["store"], "query">, userId: string | undefined): Promise<{ generation: number; ended: Set<string> } | undefined> {
  if (!isUuid(userId)) return undefined;
  const row = (
    await store.query<{ token_generation: number; ended: string[] }>(
      "SELECT token_generation, array(SELECT token_id FROM ended_tokens e WHERE e.user_id = u.id AND e.expires_at > now() ORDER BY token_id) AS ended FROM users u WHERE id = $1",
      [userId],
    )
  ).rows[0];
  return row && { generation: row.token_generation, ended: new Set(row.ended) };
}

const published = (jwks: JSONWebKeySet) => ({ keys: jwks.keys.map((k) => ({ kid: k.kid, x: k.x })) });

/** GetSigningKeys, IssueServiceToken, RotateSigningKey. */
export function keyHandlers(svc: ServiceContext): Handlers {
  const p = identityParts(svc);
  return {
    GetSigningKeys: async () => published(await (await p.keys).published()),
    // An administrator's call (the guard lets administrators only), never a part's, though a
    // part's token carries the administrator role: the method names no callers, so the guard
    // refuses every part's token.
    RotateSigningKey: async () => published(await (await p.keys).rotate()),
    async IssueServiceToken(req: { name?: string; credential?: string }) {
      const expected = p.clients.get(req.name ?? "");
      const given = createHash("sha256").update(req.credential ?? "").digest();
      if (!expected || !timingSafeEqual(expected, given)) throw ApiError.unauthenticated("The service credential is not valid");
      const expires = Math.floor(Date.now() / 1000) + SERVICE_TOKEN_SECONDS;
      return { token: await (await p.keys).sign(partIdentity(req.name!, expires), SERVICE_AUDIENCE), expires };
    },
  };
}

/**
 * The source a password check is counted against: the client address the gateway names (only
 * a part with a service token may name one), else the address the call came from.
 */
export function sourceOf(req: { source?: string }, ctx: CallContext): string {
  // A part's token here is the gateway's: the only part Authenticate names among its callers.
  if (req.source && ctx.identity && partOf(ctx.identity) !== undefined) return req.source;
  return (ctx.peer ?? "").replace(/:\d+$/, "");
}
