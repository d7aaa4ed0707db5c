// The keys that sign tokens: Ed25519, kept in this service's schema, made at first start. A
// rotation (RotateSigningKey, an administrator's call, or on its own once the key is
// VNM_SIGNING_KEY_DAYS old) makes a new key that is published at once but signs only
// PUBLISH_AHEAD_MS later, so every part has fetched it before it meets a token it signed (an
// unknown key id is fetched for at most every few seconds). The old key signs until then and
// stays published until every token it could have signed has expired (MAX_TOKEN_SECONDS).
// Replicas read the keys again every few seconds, so all switch at the same time.
import { createPrivateKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import { calculateJwkThumbprint, type JSONWebKeySet, type JWK, SignJWT } from "jose";
import { type Identity, jwksOf, type Logger, MAX_TOKEN_SECONDS, type Store, tokenClaims } from "@vnm/kit";

interface KeyRow {
  kid: string;
  private_jwk: JWK;
  signs_from: Date;
}

interface Loaded {
  at: number;
  /** Newest first. */
  keys: { kid: string; key: KeyObject; signsFrom: number }[];
  published: JSONWebKeySet;
}

const RELOAD_MS = 5_000;
const PUBLISH_AHEAD_MS = 15_000;
const CHECK_AGE_MS = 3600_000;

export interface SigningKeys {
  /** The published public keys (the one signing, the next one, retired ones still valid). */
  published(): Promise<JSONWebKeySet>;
  /** A token for `identity` in `audience`, signed with the current key. */
  sign(identity: Identity, audience: string): Promise<string>;
  /** A new key, published now, signs from PUBLISH_AHEAD_MS on; returns the keys now published. */
  rotate(): Promise<JSONWebKeySet>;
  /** Stops the scheduled rotation check. */
  stop(): void;
}

async function newKey(): Promise<{ kid: string; jwk: JWK }> {
  const { privateKey } = generateKeyPairSync("ed25519");
  const jwk = privateKey.export({ format: "jwk" }) as JWK;
  return { kid: await calculateJwkThumbprint({ kty: "OKP", crv: "Ed25519", x: jwk.x! }), jwk };
}

/** Adds a key under the lock: a first one, signing at once, when none is in use (`onlyIfNone`), else the next one. */
async function addKey(store: Store, onlyIfNone: boolean): Promise<void> {
  const key = await newKey();
  await store.tx(undefined, async (q) => {
    await q.query("SELECT pg_advisory_xact_lock(hashtext('vnm-identity:signing-keys'))");
    if (onlyIfNone && (await q.query("SELECT 1 FROM signing_keys WHERE retired_at IS NULL")).rows.length > 0) return;
    const ahead = onlyIfNone ? 0 : PUBLISH_AHEAD_MS;
    const signsFrom = (await q.query<{ t: Date }>(`SELECT now() + interval '${ahead} milliseconds' AS t`)).rows[0]!.t;
    // The keys in use sign until the new one does.
    await q.query("UPDATE signing_keys SET retired_at = $1 WHERE retired_at IS NULL", [signsFrom]);
    await q.query("INSERT INTO signing_keys (kid, private_jwk, signs_from) VALUES ($1, $2, $3)", [key.kid, key.jwk, signsFrom]);
    await q.query(`DELETE FROM signing_keys WHERE retired_at < now() - interval '${MAX_TOKEN_SECONDS} seconds'`);
  });
}

async function load(store: Store): Promise<Loaded> {
  const rows = (
    await store.query<KeyRow>(
      `SELECT kid, private_jwk, signs_from FROM signing_keys
       WHERE retired_at IS NULL OR retired_at > now() - interval '${MAX_TOKEN_SECONDS} seconds' ORDER BY signs_from DESC`,
    )
  ).rows;
  if (rows.length === 0) throw new Error("no signing key");
  return {
    at: Date.now(),
    keys: rows.map((r) => ({ kid: r.kid, key: createPrivateKey({ key: r.private_jwk, format: "jwk" } as never), signsFrom: r.signs_from.getTime() })),
    published: jwksOf(rows.map((r) => ({ kid: r.kid, x: String(r.private_jwk.x) }))),
  };
}

export async function signingKeys(store: Store, log: Logger, signingKeyDays: number): Promise<SigningKeys> {
  const maxAgeMs = signingKeyDays * 86_400_000;
  await addKey(store, true);
  let loaded = await load(store);
  const current = async () => {
    if (Date.now() - loaded.at >= RELOAD_MS) loaded = await load(store);
    return loaded;
  };
  const rotate = async () => {
    await addKey(store, false);
    loaded = await load(store);
    log.info("signing key rotated", { kid: loaded.keys[0]!.kid, signsFrom: new Date(loaded.keys[0]!.signsFrom).toISOString() });
    return loaded.published;
  };
  // At start and every hour: a key VNM_SIGNING_KEY_DAYS old is replaced.
  const checkAge = () =>
    void current()
      .then((l) => (Date.now() - l.keys[0]!.signsFrom >= maxAgeMs ? rotate() : undefined))
      .catch((err: unknown) => log.warn("signing key check failed", { err }));
  checkAge();
  const check = setInterval(checkAge, CHECK_AGE_MS);
  check.unref();
  return {
    published: async () => (await current()).published,
    async sign(identity, audience) {
      const { keys } = await current();
      const now = Date.now();
      const signing = keys.find((k) => k.signsFrom <= now) ?? keys.at(-1)!;
      return new SignJWT(tokenClaims(identity, audience)).setProtectedHeader({ alg: "EdDSA", typ: "JWT", kid: signing.kid }).sign(signing.key);
    },
    rotate,
    stop: () => clearInterval(check),
  };
}
