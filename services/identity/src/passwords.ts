// Password hashing with scrypt (memory-hard: 32 MiB per hash), salted, in a self-describing
// format: scrypt$<N>$<r>$<p>$<salt>$<hash> (base64url). Hashes wait in a bounded queue: at
// most VNM_HASH_CONCURRENCY at once and VNM_HASH_QUEUE waiting; past that a call is refused with
// RESOURCE_EXHAUSTED (429 with Retry-After at the gateway) instead of slowing every other one.
import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from "node:crypto";
import { ApiError } from "@vnm/kit";

const PARAMS = { N: 2 ** 15, r: 8, p: 1 };
const KEY_LENGTH = 32;

// The service's configuration sets them at start (setHashLimits); these hold until then.
let CONCURRENCY = 2;
let QUEUE = 32;
let running = 0;
const waiting: (() => void)[] = [];

/** At most `concurrency` hashes at once and `queue` waiting (VNM_HASH_CONCURRENCY, VNM_HASH_QUEUE). */
export function setHashLimits(concurrency: number, queue: number): void {
  CONCURRENCY = concurrency;
  QUEUE = queue;
}

/** Runs `work` when a slot is free; refuses at once when the queue is full. */
async function queued<T>(work: () => Promise<T>): Promise<T> {
  if (running >= CONCURRENCY) {
    if (waiting.length >= QUEUE) throw ApiError.exhausted("Too many password checks under way; try again shortly");
    await new Promise<void>((resolve) => waiting.push(resolve));
  } else running++;
  try {
    return await work();
  } finally {
    const next = waiting.shift();
    if (next) next();
    else running--;
  }
}

function derive(password: string, salt: Buffer, o: { N: number; r: number; p: number }): Promise<Buffer> {
  return queued(() => scryptKey(password, salt, o));
}

function scryptKey(password: string, salt: Buffer, o: { N: number; r: number; p: number }): Promise<Buffer> {
  const options: ScryptOptions = { N: o.N, r: o.r, p: o.p, maxmem: 256 * o.N * o.r };
  return new Promise((resolve, reject) =>
    scrypt(password.normalize("NFC"), salt, KEY_LENGTH, options, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, PARAMS);
  return ["scrypt", PARAMS.N, PARAMS.r, PARAMS.p, salt.toString("base64url"), key.toString("base64url")].join("$");
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split("$");
  if (scheme !== "scrypt" || !salt || !hash) return false;
  const expected = Buffer.from(hash, "base64url");
  const key = await derive(password, Buffer.from(salt, "base64url"), { N: Number(n), r: Number(r), p: Number(p) });
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/** A hash of nothing, checked against when the user does not exist (same cost, no timing tell). */
export const DUMMY_HASH = await hashPassword(randomBytes(16).toString("hex"));
