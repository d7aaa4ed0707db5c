// The keys that sign tokens: Ed25519, kept in this service's schema, made at first start. The
// newest unretired key signs; a rotation (RotateSigningKey, an administrator's call, or on its
// own once the key is VNM_SIGNING_KEY_DAYS old) makes a new one and retires the old, which stays
// published until every token it could have signed has expired (MAX_TOKEN_SECONDS). Replicas
// read the keys again every half minute, so all sign with the new key soon after a rotation.
import { createPrivateKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import { calculateJwkThumbprint, type JSONWebKeySet, type JWK, SignJWT } from "jose";
import { type Identity, jwksOf, type Logger, MAX_TOKEN_SECONDS, parsePositiveInt, type Store, tokenClaims } from "@vnm/kit";

interface KeyRow {
  kid: string;
  private_jwk: JWK;
  created_at: Date;
}

interface Loaded {
  at: number;
  signing: { kid: string; key: KeyObject; createdAt: Date };
  published: JSONWebKeySet;
}

const RELOAD_MS = 30_000;
const CHECK_AGE_MS = 3600_000;

export interface SigningKeys {
  /** The published public keys (signing and retired-but-valid). */
  published(): Promise<JSONWebKeySet>;
  /** A token for `identity` in `audience`, signed with the current key. */
  sign(identity: Identity, audience: string): Promise<string>;
  /** A new key signs from now on; returns the keys now published. */
  rotate(): Promise<JSONWebKeySet>;
  /** Stops the scheduled rotation check. */
  stop(): void;
}

async function newKey(): Promise<{ kid: string; jwk: JWK }> {
  const { privateKey } = generateKeyPairSync("ed25519");
  const jwk = privateKey.export({ format: "jwk" }) as JWK;
  return { kid: await calculateJwkThumbprint({ kty: "OKP", crv: "Ed25519", x: jwk.x! }), jwk };
}

/** Adds a key under the lock: a first one when none signs (`onlyIfNone`), else a rotation. */
async function addKey(store: Store, onlyIfNone: boolean): Promise<void> {
  const key = await newKey();
  await store.tx(undefined, async (q) => {
    await q.query("SELECT pg_advisory_xact_lock(hashtext('vnm-identity:signing-keys'))");
    if (onlyIfNone && (await q.query("SELECT 1 FROM signing_keys WHERE retired_at IS NULL")).rows.length > 0) return;
    await q.query("UPDATE signing_keys SET retired_at = now() WHERE retired_at IS NULL");
    await q.query("INSERT INTO signing_keys (kid, private_jwk) VALUES ($1, $2)", [key.kid, key.jwk]);
    await q.query(`DELETE FROM signing_keys WHERE retired_at < now() - interval '${MAX_TOKEN_SECONDS} seconds'`);
  });
}

async function load(store: Store): Promise<Loaded> {
  const rows = (
    await store.query<KeyRow & { retired: boolean }>(
      `SELECT kid, private_jwk, created_at, retired_at IS NOT NULL AS retired FROM signing_keys
       WHERE retired_at IS NULL OR retired_at > now() - interval '${MAX_TOKEN_SECONDS} seconds' ORDER BY retired_at DESC NULLS FIRST, created_at DESC`,
    )
  ).rows;
  const current = rows[0];
  if (!current || current.retired) throw new Error("no signing key");
  return {
    at: Date.now(),
    signing: { kid: current.kid, key: createPrivateKey({ key: current.private_jwk, format: "jwk" } as never), createdAt: current.created_at },
    published: jwksOf(rows.map((r) => ({ kid: r.kid, x: String(r.private_jwk.x) }))),
  };
}

export async function signingKeys(store: Store, log: Logger, env: NodeJS.ProcessEnv): Promise<SigningKeys> {
  const maxAgeMs = parsePositiveInt(env["VNM_SIGNING_KEY_DAYS"] || "30") * 86_400_000;
  await addKey(store, true);
  let loaded = await load(store);
  const current = async () => {
    if (Date.now() - loaded.at >= RELOAD_MS) loaded = await load(store);
    return loaded;
  };
  const rotate = async () => {
    await addKey(store, false);
    loaded = await load(store);
    log.info("signing key rotated", { kid: loaded.signing.kid });
    return loaded.published;
  };
  // At start and every hour: a key VNM_SIGNING_KEY_DAYS old is replaced.
  const checkAge = () =>
    void current()
      .then((l) => (Date.now() - l.signing.createdAt.getTime() >= maxAgeMs ? rotate() : undefined))
      .catch((err: unknown) => log.warn("signing key check failed", { err }));
  checkAge();
  const check = setInterval(checkAge, CHECK_AGE_MS);
  check.unref();
  return {
    published: async () => (await current()).published,
    async sign(identity, audience) {
      const { signing } = await current();
      return new SignJWT(tokenClaims(identity, audience)).setProtectedHeader({ alg: "EdDSA", typ: "JWT", kid: signing.kid }).sign(signing.key);
    },
    rotate,
    stop: () => clearInterval(check),
  };
}
