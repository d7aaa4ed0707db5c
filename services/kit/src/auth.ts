// Caller identity: bearer tokens as compact JWS (JWT, HS256) with a key id, so any gateway
// replica and any service verifies them with the shared secret and no session store. Two keys
// may be valid during a change: VNM_TOKEN_SECRET signs, VNM_TOKEN_SECRET_PREVIOUS still verifies.
// A token carries its user's token generation (`gen`); the gateway refuses one older than the
// identity service's (revocation), services check signature and expiry only.
import { createHash, createHmac } from "node:crypto";
import { errors, jwtVerify } from "jose";

export const ROLES = ["admin", "tenant_admin", "tenant_user"] as const;
export type Role = (typeof ROLES)[number];

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
}

/** The signing secret and, while keys change, the previous one (still accepted). */
export interface TokenKeys {
  current: string;
  previous?: string;
}

/** The strongest of a user's roles (admin > tenant_admin > tenant_user). */
export function strongestRole(roles: readonly string[]): Role | undefined {
  return ROLES.find((r) => roles.includes(r));
}

const b64 = (b: Buffer | string) => Buffer.from(b).toString("base64url");
const keysOf = (k: string | TokenKeys): TokenKeys => (typeof k === "string" ? { current: k } : k);
/** A key's id: a hash of it, so the secret never shows. */
export const keyId = (secret: string) => createHash("sha256").update(secret).digest("base64url").slice(0, 12);

/**
 * A signed token for `identity` (JWS compact, HS256, kid of the signing key). Signing is the
 * HMAC of RFC 7515 done here, synchronously; verification, where the risks are, is jose's.
 */
export function signToken(identity: Identity, keys: string | TokenKeys): string {
  const secret = keysOf(keys).current;
  const header = b64(JSON.stringify({ alg: "HS256", typ: "JWT", kid: keyId(secret) }));
  const claims: Record<string, unknown> = { sub: identity.userId, name: identity.name, role: identity.role, tid: identity.tenantId, exp: identity.exp };
  if (identity.gen !== undefined) claims["gen"] = identity.gen;
  const input = `${header}.${b64(JSON.stringify(claims))}`;
  return `${input}.${b64(createHmac("sha256", secret).update(input).digest())}`;
}

/**
 * The token a process of the system presents for itself (`service:<name>`, an administrator
 * with no tenant and no generation), signed for ten minutes and re-signed a minute before expiry.
 */
export function serviceToken(name: string, keys: string | TokenKeys): () => string {
  let token = { value: "", exp: 0 };
  return () => {
    const now = Math.floor(Date.now() / 1000);
    if (token.exp - now < 60) {
      const exp = now + 600;
      token = { value: signToken({ userId: `service:${name}`, name, role: "admin", tenantId: null, exp }, keys), exp };
    }
    return token.value;
  };
}

/** The identity a token carries, or undefined when it is malformed, forged, altered or expired. */
export async function verifyToken(token: string, keys: string | TokenKeys, nowMs = Date.now()): Promise<Identity | undefined> {
  const { current, previous } = keysOf(keys);
  const byKid = new Map([[keyId(current), current], ...(previous ? [[keyId(previous), previous] as [string, string]] : [])]);
  // Base64url has spare bits in its last character: only the canonical spelling of the
  // signature is accepted, so one token has one string.
  const sig = token.split(".")[2] ?? "";
  if (!/^[A-Za-z0-9_-]{43}$/.test(sig) || b64(Buffer.from(sig, "base64url")) !== sig) return undefined;
  try {
    const { payload } = await jwtVerify(
      token,
      (header) => {
        const secret = header.kid === undefined ? undefined : byKid.get(header.kid);
        if (!secret) throw new errors.JWSSignatureVerificationFailed("unknown key");
        return new TextEncoder().encode(secret);
      },
      { algorithms: ["HS256"], requiredClaims: ["exp", "sub"], currentDate: new Date(nowMs) },
    );
    return identityOf(payload);
  } catch {
    return undefined;
  }
}

function identityOf(p: Record<string, unknown>): Identity | undefined {
  const role = p["role"] as Role;
  if (!ROLES.includes(role) || typeof p["sub"] !== "string" || typeof p["name"] !== "string" || typeof p["exp"] !== "number") return undefined;
  const tenantId = typeof p["tid"] === "string" ? p["tid"] : null;
  const id: Identity = { userId: p["sub"], name: p["name"], role, tenantId, exp: p["exp"] };
  if (typeof p["gen"] === "number") id.gen = p["gen"];
  return id;
}

/**
 * verifyToken with a memory of tokens already checked (a client sends the same token on every
 * request): a hit costs a map lookup and an expiry check instead of an HMAC and a JSON parse.
 * The one verification of gateways and services alike.
 */
export function tokenVerifier(keys: string | TokenKeys, maxEntries = 10_000): (token: string) => Promise<Identity | undefined> {
  const known = new Map<string, Identity>();
  return async (token) => {
    const hit = known.get(token);
    if (hit) {
      if (hit.exp * 1000 > Date.now()) return hit;
      known.delete(token);
      return undefined;
    }
    const identity = await verifyToken(token, keys);
    if (identity) {
      if (known.size >= maxEntries) known.clear();
      known.set(token, identity);
    }
    return identity;
  };
}

/** The token of an `Authorization: Bearer` value (gRPC metadata or HTTP header). */
export function bearer(value: unknown): string | undefined {
  if (typeof value !== "string") return undefined;
  const m = /^Bearer\s+(\S+)$/i.exec(value.trim());
  return m?.[1];
}
