// What a part needs of the identity service to check callers and to call others: the public
// keys, its own service token (client credentials exchanged for ten minutes), and a user's
// token generation with the ids of its tokens ended one at a time. Every part but identity asks
// identity over gRPC; identity answers itself.
import { status as Code } from "@grpc/grpc-js";
import type { JSONWebKeySet } from "jose";
import { type Identity, type KeySource, keyRing, SERVICE_AUDIENCE, serviceTokenSource, tokenVerifier, USER_AUDIENCE } from "./auth.ts";
import type { Bus } from "./bus.ts";
import { ApiError } from "./errors.ts";
import { revocations, type TokenState } from "./revocation.ts";
import { memberOf, stringMember } from "./values.ts";

export const AUTH_SERVICE = "vnm.identity.v1.AuthService";

export interface Authority {
  /** The published public keys (JWKS). */
  keys: KeySource;
  /** This part's own token (`aud: "vnm-internal"`), renewed before it expires. */
  serviceToken(): Promise<string>;
  /** A user's current token generation and ended tokens; undefined when the user no longer exists. */
  tokenState(userId: string): Promise<TokenState | undefined>;
}

/** A call of an AuthService RPC at the identity service, with a token or none. */
export type IdentityCall = (rpc: string, request: Record<string, unknown>, token?: string) => Promise<Record<string, unknown>>;

/** The published keys as a JWKS (the RPC carries only what differs between Ed25519 keys). */
export function jwksOf(keys: { kid: string; x: string }[]): JSONWebKeySet {
  return { keys: keys.map((k) => ({ kty: "OKP", crv: "Ed25519", alg: "EdDSA", use: "sig", kid: k.kid, x: k.x })) };
}

/** The keys of a GetSigningKeys answer (SigningKeys): each with its id and public key; others left out. */
function signingKeys(answer: unknown): { kid: string; x: string }[] {
  const keys = memberOf(answer, "keys");
  if (!Array.isArray(keys)) return [];
  return keys.flatMap((k: unknown) => {
    const kid = stringMember(k, "kid");
    const x = stringMember(k, "x");
    return kid !== undefined && x !== undefined ? [{ kid, x }] : [];
  });
}

/** The identity service, asked over gRPC as the part `name` holding `credential`. */
export function remoteAuthority(call: IdentityCall, name: string, credential: string): Authority {
  const serviceToken = serviceTokenSource(async () => {
    const r = await call("IssueServiceToken", { name, credential });
    return { token: String(r["token"]), expires: Number(r["expires"]) };
  });
  return {
    keys: async () => jwksOf(signingKeys(await call("GetSigningKeys", {}))),
    serviceToken,
    async tokenState(userId) {
      try {
        const r = await call("GetTokenGeneration", { id: userId }, await serviceToken());
        const ended = Array.isArray(r["endedTokens"]) ? r["endedTokens"].filter((t): t is string => typeof t === "string") : [];
        return { generation: Number(r["generation"] ?? 0), ended: new Set(ended) };
      } catch (err) {
        if (ApiError.from(err).code === Code.NOT_FOUND) return undefined;
        throw err;
      }
    },
  };
}

export interface CallerCheck {
  /** The identity of a token whose signature, audience, expiry and generation hold. */
  verify(token: string): Promise<Identity | undefined>;
  /** `verify`'s identity when it is known at once (a token checked before, its user's generation known); undefined: ask `verify`. */
  known(token: string): Identity | undefined;
  /** Whether a verified identity's token is still current (revocation). */
  current(who: Identity): Promise<boolean>;
  /** Forgets what is known of a user (its tokens may have ended). */
  forget(userId: string): void;
  /** Calls `listener` with a user whose tokens may have ended; returns the unsubscriber. */
  onChange(listener: (userId: string) => void): () => void;
}

/**
 * The one check of a caller's token at every part: signature by a published key, audience
 * (`internal`: users' and parts' tokens; else users' only, as at the public gateway), a
 * bounded expiry, and the user's token generation (revocation).
 */
export function callerCheck(authority: Authority, bus: Bus, opts: { internal: boolean; feedReachesIdentity: boolean }): CallerCheck {
  const verify = tokenVerifier(keyRing(authority.keys), opts.internal ? [USER_AUDIENCE, SERVICE_AUDIENCE] : [USER_AUDIENCE]);
  const revoked = revocations({ bus, tokenState: authority.tokenState, feedReachesIdentity: opts.feedReachesIdentity });
  return {
    async verify(token) {
      const identity = await verify(token);
      return identity && (await revoked.current(identity)) ? identity : undefined;
    },
    known(token) {
      const identity = verify.known(token);
      return identity && revoked.currentNow(identity) === true ? identity : undefined;
    },
    current: revoked.current,
    forget: revoked.forget,
    onChange: revoked.onChange,
  };
}
