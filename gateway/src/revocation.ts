// Revocable tokens: a token carries its user's token generation; the identity service keeps the
// current one and moves it on at a password, role or tenant change and at logout, and a deleted
// user has none. The gateway remembers each user's generation and forgets it when the identity
// service announces a change of that user on the bus, so every replica refuses an old token
// within a second of the change. Without the change feed, what is remembered lasts a second.
import { status as Code } from "@grpc/grpc-js";
import { ApiError, type Bus, type Identity, serviceToken, type TokenKeys, type Upstream } from "@vnm/kit";

const AUTH = "vnm.identity.v1.AuthService";
/** How long a user's generation is trusted: while the feed is up, and without it. */
const TRUST_MS = { feed: 5 * 60_000, noFeed: 1_000 };

export interface Revocations {
  /** Whether a verified identity's token is still current (its user's generation has not moved on). */
  current(who: Identity): Promise<boolean>;
  /** Logout: ends every token of the user issued so far. */
  revoke(userId: string): Promise<void>;
  /** Calls `listener` with a user whose tokens may have ended; returns the unsubscriber. */
  onChange(listener: (userId: string) => void): () => void;
}

interface Options {
  upstream: Upstream;
  bus: Bus;
  keys: TokenKeys;
  callTimeoutMs: number;
}

export function revocations(opts: Options): Revocations {
  const known = new Map<string, { generation: Promise<number | undefined>; at: number }>();
  const listeners = new Set<(userId: string) => void>();
  const token = serviceToken("gateway", opts.keys);
  let feedUp = opts.bus.state() === "connected";
  const forget = (userId: string) => {
    known.delete(userId);
    for (const l of listeners) l(userId);
  };
  opts.bus.subscribe(
    ["identity.User.*"],
    (msg) => {
      const id = (msg.data as { id?: unknown } | null)?.id;
      if (typeof id === "string") forget(id);
    },
    (state) => {
      feedUp = state === "connected";
      if (!feedUp) known.clear();
    },
  );
  /** The user's generation; undefined when the user no longer exists. */
  const fetchGeneration = async (userId: string): Promise<number | undefined> => {
    try {
      const r = await opts.upstream.call(AUTH, "GetTokenGeneration", { id: userId }, opts.callTimeoutMs, token());
      return Number(r.response["generation"] ?? 0);
    } catch (err) {
      if (ApiError.from(err).code === Code.NOT_FOUND) return undefined;
      throw err;
    }
  };
  const generation = (userId: string): Promise<number | undefined> => {
    const hit = known.get(userId);
    if (hit && Date.now() - hit.at < (feedUp ? TRUST_MS.feed : TRUST_MS.noFeed)) return hit.generation;
    const entry = { generation: fetchGeneration(userId), at: Date.now() };
    if (known.size >= 100_000) known.clear();
    known.set(userId, entry);
    entry.generation.catch(() => known.get(userId) === entry && known.delete(userId));
    return entry.generation;
  };
  return {
    async current(who) {
      // A service's own token (no generation) is not a user's; it expires within minutes.
      if (who.gen === undefined) return who.userId.startsWith("service:");
      const now = await generation(who.userId);
      return now !== undefined && who.gen >= now;
    },
    async revoke(userId) {
      await opts.upstream.call(AUTH, "RevokeTokens", { id: userId }, opts.callTimeoutMs, token());
      forget(userId);
    },
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
