// Caller identity: stateless bearer tokens signed with HMAC-SHA256, so any gateway replica and
// any service verifies them with the shared secret and no session store.
import { createHmac, timingSafeEqual } from "node:crypto";

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
}

/** The strongest of a user's roles (admin > tenant_admin > tenant_user). */
export function strongestRole(roles: readonly string[]): Role | undefined {
  return ROLES.find((r) => roles.includes(r));
}

const b64 = (b: Buffer | string) => Buffer.from(b).toString("base64url");

function mac(payload: string, secret: string): Buffer {
  return createHmac("sha256", secret).update(payload).digest();
}

export function signToken(identity: Identity, secret: string): string {
  const payload = b64(JSON.stringify(identity));
  return `v1.${payload}.${b64(mac(payload, secret))}`;
}

/** The identity a token carries, or undefined when it is malformed, forged or expired. */
export function verifyToken(token: string, secret: string, nowMs = Date.now()): Identity | undefined {
  const parts = token.split(".");
  if (parts.length !== 3 || parts[0] !== "v1") return undefined;
  const [, payload, sig] = parts as [string, string, string];
  const expected = mac(payload, secret);
  const given = Buffer.from(sig, "base64url");
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  try {
    const id = JSON.parse(Buffer.from(payload, "base64url").toString("utf8")) as Identity;
    if (typeof id.exp !== "number" || id.exp * 1000 <= nowMs) return undefined;
    if (!ROLES.includes(id.role)) return undefined;
    return id;
  } catch {
    return undefined;
  }
}

/**
 * verifyToken with a memory of tokens already checked (a client sends the same token on every
 * request): a hit costs a map lookup and an expiry check instead of an HMAC and a JSON parse.
 */
export function tokenVerifier(secret: string, maxEntries = 10_000): (token: string) => Identity | undefined {
  const known = new Map<string, Identity>();
  return (token) => {
    const hit = known.get(token);
    if (hit) {
      if (hit.exp * 1000 > Date.now()) return hit;
      known.delete(token);
      return undefined;
    }
    const identity = verifyToken(token, secret);
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
