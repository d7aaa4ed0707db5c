// Revocable tokens: a token carries its user's token generation; the identity service keeps the
// current one and moves it on at a password, role or tenant change and at a logout everywhere,
// and a deleted user has none. A logout of one session ends that token alone: identity keeps
// the ids of such tokens until they expire, and hands them out with the generation. Every part
// (gateway replicas and services alike) remembers each user's generation and forgets it when
// the identity service announces a change of that user on the bus, so every part refuses an
// old token within a second of the change. Without the change feed (the bus down, or a
// stand-in bus that does not reach other processes), what is remembered lasts a second.
import { type Identity, partOf } from "./auth.ts";
import type { Bus } from "./bus.ts";
import { memberOf } from "./values.ts";

/** How long a user's generation is trusted: while the feed is up, and without it. */
const TRUST_MS = { feed: 5 * 60_000, noFeed: 1_000 };

/** What identity says of a user's tokens: its generation, and the ids of tokens ended one at a time. */
export interface TokenState {
  generation: number;
  ended: ReadonlySet<string>;
}

export interface Revocations {
  /** Whether a verified identity's token is still current (its user's generation has not moved on). */
  current(who: Identity): Promise<boolean>;
  /** `current`'s answer when it is known without asking identity (undefined: ask `current`). */
  currentNow(who: Identity): boolean | undefined;
  /** Forgets the user's generation and tells the listeners. */
  forget(userId: string): void;
  /** Calls `listener` with a user whose tokens may have ended; returns the unsubscriber. */
  onChange(listener: (userId: string) => void): () => void;
}

interface Options {
  bus: Bus;
  /**
   * Whether the identity service's changes arrive on `bus`: NATS, or identity's own process.
   * A stand-in bus of another process hears nothing of them.
   */
  feedReachesIdentity: boolean;
  /** The user's generation and ended tokens; undefined when the user no longer exists. */
  tokenState(userId: string): Promise<TokenState | undefined>;
}

export function revocations(opts: Options): Revocations {
  /** A user's generation as asked of identity, and (`settled`) its answer once it came. */
  type Entry = { generation: Promise<TokenState | undefined>; at: number; settled?: { value: TokenState | undefined } };
  const known = new Map<string, Entry>();
  const listeners = new Set<(userId: string) => void>();
  let feedUp = opts.bus.state() === "connected";
  const forget = (userId: string) => {
    known.delete(userId);
    for (const l of listeners) l(userId);
  };
  opts.bus.subscribe(
    ["identity.User.*"],
    (msg) => {
      const id = memberOf(msg.data, "id");
      if (typeof id === "string") forget(id);
    },
    (state) => {
      feedUp = state === "connected";
      if (!feedUp) known.clear();
    },
  );
  const trustMs = () => (feedUp && opts.feedReachesIdentity ? TRUST_MS.feed : TRUST_MS.noFeed);
  const generation = (userId: string): Promise<TokenState | undefined> => {
    const hit = known.get(userId);
    if (hit && Date.now() - hit.at < trustMs()) return hit.generation;
    const entry: Entry = { generation: opts.tokenState(userId), at: Date.now() };
    if (known.size >= 100_000) known.clear();
    known.set(userId, entry);
    entry.generation.then(
      (value) => {
        entry.settled = { value };
      },
      () => known.get(userId) === entry && known.delete(userId),
    );
    return entry.generation;
  };
  const isCurrent = (who: Identity, now: TokenState | undefined) =>
    now !== undefined && who.gen !== undefined && who.gen >= now.generation && !(who.tokenId !== undefined && now.ended.has(who.tokenId));
  return {
    async current(who) {
      // A part's own token (no generation) is not a user's; it expires within minutes.
      if (who.gen === undefined) return partOf(who) !== undefined;
      return isCurrent(who, await generation(who.userId));
    },
    currentNow(who) {
      if (who.gen === undefined) return partOf(who) !== undefined;
      const hit = known.get(who.userId);
      if (!hit?.settled || Date.now() - hit.at >= trustMs()) return undefined;
      return isCurrent(who, hit.settled.value);
    },
    forget,
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
