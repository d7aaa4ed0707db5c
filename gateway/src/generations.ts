// The kinds' cache generations as Redis holds them, known here without asking: Redis tells this
// gateway of every change of a generation key (server-assisted client-side caching: CLIENT
// TRACKING in broadcast mode for the generation keys' prefix, its messages redirected to a
// connection of this gateway's own that listens on `__redis__:invalidate`), so a hit on a local
// copy needs no round trip. Redis sends the message in the same turn as its answer to the write
// that moved the generation, before that write's client can have its answer, so a client reads
// its own write through any gateway. A generation is known only while both connections are up
// and tracking is on, and for at most TRUST_MS; otherwise the cache reads it from Redis.
import { messageOf } from "@vnm/kit";
import { keepConnecting } from "@vnm/kit/limits";
import type { Redis } from "ioredis";
import type { Logger } from "@vnm/kit";

const CHANNEL = "__redis__:invalidate";
/**
 * How long a generation is known without reading it again: bounds what a connection that stays
 * open but silent (a broken network path no close has reached yet) could hide.
 */
const TRUST_MS = 1_000;
/** Kinds whose changes are remembered; past it (junk keys under the prefix) everything is forgotten. */
const MAX_KINDS = 10_000;

/** What a read of a generation started under; it is remembered only if nothing moved since. */
export interface Mark {
  session: number;
  epoch: number;
}

export class TrackedGenerations {
  private readonly known = new Map<string, { gen: string; at: number }>();
  /** Per kind, how many changes of its generation were heard: a read that raced one is not remembered. */
  private readonly epochs = new Map<string, number>();
  /** Moves whenever tracking stops or a flush is heard: reads started before are not remembered. */
  private session = 0;
  private up = false;
  private subId: string | undefined;
  private readonly sub: Redis;
  private readonly main: Redis;
  private readonly keyPrefix: string;
  private readonly log: Logger;

  /** `keyPrefix`: the generation keys' common prefix; the kind is the rest of the key. */
  constructor(main: Redis, keyPrefix: string, log: Logger) {
    this.main = main;
    this.keyPrefix = keyPrefix;
    this.log = log;
    // Named, so an operator (and a test) can find it in CLIENT LIST. RESP2: Redis sends a RESP3
    // redirect target its messages as "invalidate" pushes, which ioredis drops; to a RESP2 one
    // they are Pub/Sub messages on the channel.
    this.sub = main.duplicate({ protocol: 2, autoResubscribe: false, enableAutoPipelining: false, connectionName: `invalidations:${keyPrefix}` });
    if (main.options.sentinels) keepConnecting(this.sub);
    this.sub.on("error", () => {});
    this.sub.on("messageBuffer", (_channel: Buffer, keys: unknown) => this.heard(keys));
    this.sub.on("ready", () => {
      this.subId = undefined;
      this.restart();
    });
    this.main.on("ready", () => this.restart());
    for (const c of [this.sub, this.main]) c.on("close", () => this.stop());
  }

  /** The kind's generation when known without a round trip. */
  get(kind: string): string | undefined {
    if (!this.up) return undefined;
    const k = this.known.get(kind);
    if (!k) return undefined;
    if (Date.now() - k.at < TRUST_MS) return k.gen;
    this.known.delete(kind);
    return undefined;
  }

  /** Taken before a generation is read from Redis. */
  mark(kind: string): Mark {
    return { session: this.session, epoch: this.epochs.get(kind) ?? 0 };
  }

  /** A generation read from Redis, remembered when tracking was on throughout and no change of it was heard meanwhile. */
  learn(kind: string, mark: Mark, gen: string): void {
    if (this.up && mark.session === this.session && mark.epoch === (this.epochs.get(kind) ?? 0)) this.known.set(kind, { gen, at: Date.now() });
  }

  /** The kind's generation moves (here or elsewhere): what was known, and reads in flight, no longer count. */
  forget(kind: string): void {
    this.known.delete(kind);
    this.bump(kind);
  }

  close(): void {
    this.stop();
    this.sub.disconnect();
  }

  private bump(kind: string): void {
    if (this.epochs.size >= MAX_KINDS && !this.epochs.has(kind)) this.flush();
    this.epochs.set(kind, (this.epochs.get(kind) ?? 0) + 1);
  }

  private flush(): void {
    this.known.clear();
    this.epochs.clear();
    this.session++;
  }

  /** A message from Redis: the keys that changed, or null when the whole database may have. */
  private heard(keys: unknown): void {
    if (!Array.isArray(keys)) {
      this.flush();
      return;
    }
    for (const key of keys) {
      const name = Buffer.isBuffer(key) ? key.toString() : String(key);
      if (!name.startsWith(this.keyPrefix)) continue;
      this.forget(name.slice(this.keyPrefix.length));
    }
  }

  /** Starts tracking again, one attempt at a time (both connections may come back at once). */
  private restart(): void {
    this.starting = this.starting.then(() => this.start());
  }

  private starting = Promise.resolve();

  private stop(): void {
    if (this.up) this.log.info("cache generations: tracking off; read from Redis until it is back");
    this.up = false;
    this.flush();
  }

  /** Subscribes (once per connection of `sub`) and turns tracking on for the main connection. */
  private async start(): Promise<void> {
    this.stop();
    const session = this.session;
    if (this.sub.status !== "ready" || this.main.status !== "ready") return;
    try {
      if (this.subId === undefined) {
        const id = String(await this.sub.client("ID"));
        await this.sub.subscribe(CHANNEL);
        this.subId = id;
      }
      // Off first: a main connection that stayed up may still redirect to a connection gone.
      await this.main.client("TRACKING", "OFF");
      await this.main.client("TRACKING", "ON", "REDIRECT", this.subId, "BCAST", "PREFIX", this.keyPrefix);
      if (session !== this.session) return;
      this.up = true;
      this.log.info("cache generations: tracking on");
    } catch (err) {
      // An older Redis, or the connection went meanwhile: generations are read every time.
      this.log.warn("cache generations: tracking could not start; read from Redis", { err: messageOf(err) });
    }
  }
}
