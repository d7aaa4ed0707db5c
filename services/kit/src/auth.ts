// Caller identity: bearer tokens as compact JWS (JWT, EdDSA over Ed25519) signed by the identity
// service alone, with its private keys; every other part verifies them with the public keys
// identity publishes (a JWKS, fetched over gRPC and cached here), so no part but identity holds
// anything that signs. Two audiences: "vnm" for users (through the public gateway) and
// "vnm-internal" for the parts of the system themselves (`service:<name>`, ten minutes).
// A user's token carries its token generation (`gen`) and its own id (`jti`); revocation.ts
// checks it is current.
import { randomBytes } from "node:crypto";
import { createLocalJWKSet, decodeProtectedHeader, type JSONWebKeySet, type JWTPayload, jwtVerify } from "jose";
import { ApiError } from "./errors.ts";

export const ROLES = ["admin", "tenant_admin", "tenant_user"] as const;
export type Role = (typeof ROLES)[number];

/** The audience of a user's token: what the public gateway accepts. */
export const USER_AUDIENCE = "vnm";
/** The audience of a part's own token: accepted by services, refused at the public gateway. */
export const SERVICE_AUDIENCE = "vnm-internal";
/** A service token's life. */
export const SERVICE_TOKEN_SECONDS = 600;
/** The longest life of any token: a token claiming more is refused everywhere. */
export const MAX_TOKEN_SECONDS = 24 * 3600;

export interface Identity {
  userId: string;
  name: string;
  /** The strongest role the user holds. */
  role: Role;
  /** The tenant acted in: the user's own, or the project an admin logged in to (may be null). */
  tenantId: string | null;
  /** Expiry, seconds since the epoch. */
  exp: number;
  /** The user's token generation when the token was issued (absent: a service's own token). */
  gen?: number;
  /** The token's own id (`jti`): a logout of one session ends this token alone. */
  tokenId?: string;
}

/** How a part's own token names it (`sub`): "service:<name>". */
const PART_SUBJECT = "service:";

/** The identity a part's own token carries: the part by name, an administrator of no tenant, without a generation. */
export function partIdentity(name: string, exp: number): Identity {
  return { userId: `${PART_SUBJECT}${name}`, name, role: "admin", tenantId: null, exp };
}

/** The part a service token speaks for (`sub: "service:<name>"`); undefined for a user's token. */
export function partOf(identity: Identity): string | undefined {
  return identity.userId.startsWith(PART_SUBJECT) ? identity.userId.slice(PART_SUBJECT.length) : undefined;
}

/** The strongest of a user's roles (admin > tenant_admin > tenant_user). */
export function strongestRole(roles: readonly string[]): Role | undefined {
  return ROLES.find((r) => roles.includes(r));
}

/**
 * The claims of a token for `identity` in `audience`, issued now (identity signs them). Each
 * token has an id of its own (`jti`): Ed25519 signatures are deterministic, so two logins of one
 * user in one second would otherwise get the very same token, and share what is kept per token
 * (its request count).
 */
export function tokenClaims(identity: Identity, audience: string): JWTPayload {
  const claims: JWTPayload = { sub: identity.userId, name: identity.name, role: identity.role, tid: identity.tenantId, aud: audience, iat: Math.floor(Date.now() / 1000), exp: identity.exp, jti: randomBytes(12).toString("base64url") };
  if (identity.gen !== undefined) claims["gen"] = identity.gen;
  return claims;
}

/** Where the public keys come from: the identity service's GetSigningKeys (or its own store). */
export type KeySource = () => Promise<JSONWebKeySet>;

/** How often an unknown key id may send for the key set again. */
const REFETCH_MS = 5_000;
/** How long a key set is used before it is fetched again in the background. */
const REFRESH_MS = 5 * 60_000;

export type KeyRing = (kid: string | undefined) => Promise<ReturnType<typeof createLocalJWKSet>>;

/**
 * The public keys that verify tokens (jose's local JWKS), fetched on first use, again on an
 * unknown key id (at most every five seconds) and every five minutes; when the identity
 * service does not answer, the last good set stays (with none yet: UNAVAILABLE).
 */
export function keyRing(fetchKeys: KeySource): KeyRing {
  let set: { verify: ReturnType<typeof createLocalJWKSet>; kids: Set<string> } | undefined;
  let fetchedAt = 0;
  let inflight: Promise<void> | undefined;
  const refresh = () =>
    (inflight ??= fetchKeys()
      .then(
        (jwks) => {
          set = { verify: createLocalJWKSet(jwks), kids: new Set(jwks.keys.map((k) => String(k.kid))) };
        },
        (err: unknown) => {
          if (!set) throw ApiError.unavailable(`The identity service is unavailable, so tokens cannot be checked; try again later (${ApiError.from(err).message})`);
        },
      )
      .finally(() => {
        fetchedAt = Date.now();
        inflight = undefined;
      }));
  return async (kid) => {
    const age = Date.now() - fetchedAt;
    if (!set || (kid !== undefined && !set.kids.has(kid) && age >= REFETCH_MS)) await refresh();
    else if (age >= REFRESH_MS) void refresh().catch(() => {});
    return set!.verify;
  };
}

/** An Ed25519 signature (64 bytes) in its one canonical base64url spelling. */
function canonicalSignature(token: string): boolean {
  const sig = token.split(".")[2] ?? "";
  return /^[A-Za-z0-9_-]{86}$/.test(sig) && Buffer.from(sig, "base64url").toString("base64url") === sig;
}

/**
 * The identity a token carries, or undefined when it is malformed, forged, altered, expired,
 * of another audience or of too long a life. UNAVAILABLE when no key set could be had yet.
 */
export async function verifyToken(token: string, keys: KeyRing, audiences: readonly string[], nowMs = Date.now()): Promise<Identity | undefined> {
  // Base64url has spare bits in its last character: only the canonical spelling of the
  // signature is accepted, so one token has one string.
  if (!canonicalSignature(token)) return undefined;
  let kid: string | undefined;
  try {
    kid = decodeProtectedHeader(token).kid;
  } catch {
    return undefined;
  }
  const verifyWith = await keys(kid);
  try {
    const { payload } = await jwtVerify(token, verifyWith, {
      algorithms: ["EdDSA"],
      audience: [...audiences],
      requiredClaims: ["exp", "iat", "sub", "aud"],
      maxTokenAge: MAX_TOKEN_SECONDS,
      currentDate: new Date(nowMs),
    });
    if (payload.exp! - payload.iat! > MAX_TOKEN_SECONDS) return undefined;
    return identityOf(payload);
  } catch {
    return undefined;
  }
}

/** A user's token names a user and its generation; a part's token names `service:<name>` and none. */
function identityOf(p: JWTPayload): Identity | undefined {
  const role = ROLES.find((r) => r === p["role"]);
  if (!role || typeof p.sub !== "string" || typeof p["name"] !== "string" || typeof p.exp !== "number") return undefined;
  const internal = p.aud === SERVICE_AUDIENCE || (Array.isArray(p.aud) && p.aud.includes(SERVICE_AUDIENCE));
  if (internal !== p.sub.startsWith(PART_SUBJECT) || internal === (typeof p["gen"] === "number")) return undefined;
  const tenantId = typeof p["tid"] === "string" ? p["tid"] : null;
  const id: Identity = { userId: p.sub, name: p["name"], role, tenantId, exp: p.exp };
  if (typeof p["gen"] === "number") id.gen = p["gen"];
  if (typeof p.jti === "string") id.tokenId = p.jti;
  return id;
}

/**
 * verifyToken with a memory of tokens already checked (a client sends the same token on every
 * request): a hit costs a map lookup and an expiry check instead of a signature check and a
 * JSON parse. The one verification of gateways and services alike; `audiences` are those the
 * part accepts (the public gateway: users' only).
 */
export function tokenVerifier(keys: KeyRing, audiences: readonly string[], maxEntries = 10_000): TokenVerifier {
  // Known tokens are found by the end of their signature and compared whole: a token arrives as
  // a new string with every request, and a map's lookup hashes every character of its key (a
  // user's token is 450 characters; its hash was 2% of a cached answer's time).
  const memory = new Map<string, { token: string; identity: Identity }>();
  const slot = (token: string) => token.slice(-SLOT_CHARS);
  const known = (token: string): Identity | undefined => {
    const key = slot(token);
    const hit = memory.get(key);
    if (hit?.token !== token) return undefined;
    if (hit.identity.exp * 1000 > Date.now()) return hit.identity;
    memory.delete(key);
    return undefined;
  };
  const verify = async (token: string): Promise<Identity | undefined> => {
    const hit = known(token);
    if (hit) return hit;
    const identity = await verifyToken(token, keys, audiences);
    if (identity) {
      if (memory.size >= maxEntries) memory.clear();
      memory.set(slot(token), { token, identity });
    }
    return identity;
  };
  return Object.assign(verify, { known });
}

/**
 * A token check with a memory: the identity of a token whose signature, audience and expiry hold
 * (verifying it when it is not known yet), and `known`: the identity of a token verified before
 * and not expired, at once (undefined when the check has to be made).
 */
export type TokenVerifier = ((token: string) => Promise<Identity | undefined>) & { known(token: string): Identity | undefined };

/** How much of a token's end finds it among the known ones: 16 characters of its signature (96 bits). */
const SLOT_CHARS = 16;

/**
 * A part's own service token, asked for with `issue` and asked for again a minute before it
 * expires (one request at a time).
 */
export function serviceTokenSource(issue: () => Promise<{ token: string; expires: number }>): () => Promise<string> {
  let current = { token: "", expires: 0 };
  let inflight: Promise<string> | undefined;
  return async () => {
    if (current.expires - Date.now() / 1000 > 60) return current.token;
    inflight ??= issue()
      .then((t) => {
        current = t;
        return t.token;
      })
      .finally(() => {
        inflight = undefined;
      });
    return inflight;
  };
}

/** The token of an `Authorization: Bearer` value (gRPC metadata or HTTP header). */
export function bearer(value: unknown): string | undefined {
  if (typeof value !== "string") return undefined;
  const m = /^Bearer\s+(\S+)$/i.exec(value.trim());
  return m?.[1];
}
