import { generateKeyPairSync, type KeyObject } from "node:crypto";
import { calculateJwkThumbprint, type JSONWebKeySet, type JWK, SignJWT, UnsecuredJWT } from "jose";
import { describe, expect, it } from "vitest";
import { type Identity, keyRing, SERVICE_AUDIENCE, tokenClaims, tokenVerifier, USER_AUDIENCE, verifyToken } from "./auth.ts";
import { jwksOf } from "./authority.ts";

async function newKey(): Promise<{ key: KeyObject; kid: string; x: string }> {
  const { privateKey } = generateKeyPairSync("ed25519");
  const x = String((privateKey.export({ format: "jwk" }) as JWK).x);
  return { key: privateKey, kid: await calculateJwkThumbprint({ kty: "OKP", crv: "Ed25519", x }), x };
}

const user = (over: Partial<Identity> = {}): Identity => ({ userId: "u1", name: "ann", role: "tenant_user", tenantId: "T", exp: Math.floor(Date.now() / 1000) + 600, gen: 3, ...over });
const sign = (k: { key: KeyObject; kid: string }, who: Identity, aud = USER_AUDIENCE) =>
  new SignJWT(tokenClaims(who, aud)).setProtectedHeader({ alg: "EdDSA", typ: "JWT", kid: k.kid }).sign(k.key);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A key source over a list of keys that can be changed or made to fail, counting its fetches. */
function source(keys: { kid: string; x: string }[]) {
  const s = { keys, down: false, fetches: 0, fetch: async (): Promise<JSONWebKeySet> => {
    s.fetches++;
    if (s.down) throw new Error("identity is down");
    return jwksOf(s.keys);
  } };
  return s;
}

describe("token verification", () => {
  it("accepts identity's token for its audience only, with a bounded life, and nothing signed otherwise", async () => {
    const k = await newKey();
    const ring = keyRing(source([k]).fetch);
    expect(await verifyToken(await sign(k, user()), ring, [USER_AUDIENCE])).toMatchObject({ userId: "u1", role: "tenant_user", gen: 3 });
    const service = await sign(k, { userId: "service:bridge", name: "bridge", role: "admin", tenantId: null, exp: Math.floor(Date.now() / 1000) + 600 }, SERVICE_AUDIENCE);
    expect(await verifyToken(service, ring, [USER_AUDIENCE])).toBeUndefined();
    expect(await verifyToken(service, ring, [USER_AUDIENCE, SERVICE_AUDIENCE])).toMatchObject({ userId: "service:bridge" });
    // A user's token in the parts' audience, or a part's name in the users' one, is refused.
    expect(await verifyToken(await sign(k, user(), SERVICE_AUDIENCE), ring, [USER_AUDIENCE, SERVICE_AUDIENCE])).toBeUndefined();
    expect(await verifyToken(await sign(k, user({ exp: Math.floor(Date.now() / 1000) + 2 * 86_400 })), ring, [USER_AUDIENCE])).toBeUndefined();
    const other = await newKey();
    const forged = [await sign({ key: other.key, kid: k.kid }, user()), new UnsecuredJWT(tokenClaims(user(), USER_AUDIENCE)).encode()];
    for (const t of forged) expect(await verifyToken(t, ring, [USER_AUDIENCE])).toBeUndefined();
  });

  it("gives two tokens of one user in one second each their own string (each a count of its own)", async () => {
    const k = await newKey();
    const who = user();
    const [a, b] = [await sign(k, who), await sign(k, who)];
    expect(a).not.toBe(b);
    const ring = keyRing(source([k]).fetch);
    for (const t of [a, b]) expect(await verifyToken(t, ring, [USER_AUDIENCE])).toMatchObject({ userId: "u1" });
  });

  it("remembers a verified token as that whole token: another payload under its signature is refused, and the token still verifies after", async () => {
    const k = await newKey();
    const verify = tokenVerifier(keyRing(source([k]).fetch), [USER_AUDIENCE]);
    const ann = await sign(k, user());
    expect(await verify(ann)).toMatchObject({ userId: "u1", role: "tenant_user" });
    // The memory finds tokens by the end of their signature: a token that ends the same way must
    // still be checked whole. Here: ann's signature on an administrator's claims.
    const [header, , signature] = ann.split(".");
    const claims = Buffer.from(JSON.stringify(tokenClaims(user({ role: "admin", tenantId: null }), USER_AUDIENCE))).toString("base64url");
    expect(await verify(`${header}.${claims}.${signature}`)).toBeUndefined();
    expect(await verify(ann)).toMatchObject({ userId: "u1", role: "tenant_user" });
  });

  it("fetches the key set again for an unknown key at most every few seconds, and keeps the last good one while identity is down", async () => {
    const first = await newKey();
    const src = source([first]);
    const ring = keyRing(src.fetch);
    const old = await sign(first, user());
    expect(await verifyToken(old, ring, [USER_AUDIENCE])).toBeDefined();
    const second = await newKey();
    src.keys = [second, first];
    // Within five seconds of the last fetch, an unknown key is not fetched for: refused for now.
    expect(await verifyToken(await sign(second, user()), ring, [USER_AUDIENCE])).toBeUndefined();
    expect(src.fetches).toBe(1);
    await sleep(5_100);
    expect(await verifyToken(await sign(second, user()), ring, [USER_AUDIENCE])).toBeDefined();
    expect(src.fetches).toBe(2);
    // Identity down: the fetch for an unknown key fails, and the keys known still verify.
    src.down = true;
    await sleep(5_100);
    expect(await verifyToken(await sign(await newKey(), user()), ring, [USER_AUDIENCE])).toBeUndefined();
    expect(src.fetches).toBe(3);
    expect(await verifyToken(old, ring, [USER_AUDIENCE])).toBeDefined();
  }, 20_000);

  it("is UNAVAILABLE when no key set could be had yet", async () => {
    const src = source([]);
    src.down = true;
    const k = await newKey();
    await expect(verifyToken(await sign(k, user()), keyRing(src.fetch), [USER_AUDIENCE])).rejects.toMatchObject({ code: 14 });
  });
});
