// The change bus. With NATS_URL: NATS JetStream (publishes are acknowledged and deduplicated
// by message id). Without: an in-process stand-in, good for a single-machine run only.
import { connect, DeliverPolicy, type JetStreamClient, type NatsConnection, RetentionPolicy, StringCodec } from "nats";
import type { Logger } from "./log.ts";

export interface BusMessage {
  subject: string;
  data: unknown;
}

export type BusState = "connected" | "disconnected";

export interface Bus {
  readonly kind: "nats" | "local";
  /** Subject prefix shared by every publisher and subscriber of one deployment. */
  readonly prefix: string;
  /** Publishes and waits for the broker's acknowledgement; a retry with the same id is dropped. */
  publish(subject: string, data: unknown, msgId: string): Promise<void>;
  /** Receives every message below `<prefix>.`; `onState` hears connection changes. */
  subscribe(handler: (msg: BusMessage) => void, onState?: (state: BusState) => void): void;
  state(): BusState;
  /**
   * Delivers every message below `<prefix>.` with its sequence number, in order: those after
   * `afterSeq` first when it is given (resuming a feed), then new ones. Returns a stop function.
   */
  follow(afterSeq: number | undefined, handler: (seq: number, msg: BusMessage) => void): Promise<() => void>;
  close(): Promise<void>;
}

const sc = StringCodec();

export interface NatsBusOptions {
  url: string;
  prefix: string;
  log: Logger;
  /** Connection name shown by the server. */
  name: string;
}

export function streamName(prefix: string): string {
  return prefix.toUpperCase().replace(/[^A-Z0-9_-]/g, "_");
}

/**
 * A NATS connection that keeps trying in the background: the process starts and serves while
 * NATS is down, and publishes fail (to be retried by the outbox relay) until it is back.
 */
export function natsBus(opts: NatsBusOptions): Bus {
  let nc: NatsConnection | undefined;
  let js: JetStreamClient | undefined;
  let closed = false;
  let current: BusState = "disconnected";
  const handlers: ((msg: BusMessage) => void)[] = [];
  const stateListeners: ((s: BusState) => void)[] = [];
  let streamReady = false;

  const setState = (s: BusState) => {
    if (s === current) return;
    current = s;
    for (const l of stateListeners) l(s);
  };

  const ensureStream = async () => {
    if (!nc || streamReady) return;
    const jsm = await nc.jetstreamManager();
    const name = streamName(opts.prefix);
    try {
      await jsm.streams.info(name);
    } catch {
      await jsm.streams.add({
        name,
        subjects: [`${opts.prefix}.>`],
        retention: RetentionPolicy.Limits,
        max_age: 24 * 3600 * 1e9,
        duplicate_window: 120 * 1e9,
      });
    }
    streamReady = true;
  };

  const attach = (conn: NatsConnection) => {
    for (const h of handlers) subscribeOne(conn, h);
  };
  const subscribeOne = (conn: NatsConnection, handler: (msg: BusMessage) => void) => {
    conn.subscribe(`${opts.prefix}.>`, {
      callback: (err, m) => {
        if (err) return;
        let data: unknown = null;
        try {
          data = JSON.parse(sc.decode(m.data));
        } catch {
          /* a foreign message on our subjects: pass the subject alone */
        }
        handler({ subject: m.subject, data });
      },
    });
  };

  const run = async () => {
    let delay = 200;
    while (!closed && !nc) {
      try {
        const conn = await connect({
          servers: opts.url,
          name: opts.name,
          maxReconnectAttempts: -1,
          reconnectTimeWait: 500,
          pingInterval: 5_000,
          maxPingOut: 2,
        });
        if (closed) {
          await conn.close();
          return;
        }
        nc = conn;
        js = conn.jetstream();
        attach(conn);
        setState("connected");
        opts.log.info("connected to NATS", { url: opts.url });
        ensureStream().catch((err) => opts.log.warn("JetStream stream not ready", { err }));
        void (async () => {
          for await (const s of conn.status()) {
            if (s.type === "disconnect") setState("disconnected");
            else if (s.type === "reconnect") {
              setState("connected");
              ensureStream().catch(() => {});
            }
          }
        })().catch(() => setState("disconnected"));
      } catch (err) {
        opts.log.warn("NATS unreachable, retrying", { url: opts.url, err: (err as Error).message });
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 3_000);
      }
    }
  };
  void run();

  return {
    kind: "nats",
    prefix: opts.prefix,
    async publish(subject, data, msgId) {
      if (!js || current !== "connected") throw new Error("NATS is not connected");
      if (!streamReady) await ensureStream();
      await js.publish(subject, sc.encode(JSON.stringify(data)), { msgID: msgId, timeout: 5_000 });
    },
    subscribe(handler, onState) {
      handlers.push(handler);
      if (onState) stateListeners.push(onState);
      if (nc) subscribeOne(nc, handler);
    },
    state: () => current,
    async follow(afterSeq, handler) {
      if (!js) throw new Error("NATS is not connected");
      if (!streamReady) await ensureStream();
      const consumer = await js.consumers.get(streamName(opts.prefix), {
        filterSubjects: `${opts.prefix}.>`,
        ...(afterSeq !== undefined
          ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: afterSeq + 1 }
          : { deliver_policy: DeliverPolicy.New }),
      });
      const messages = await consumer.consume();
      void (async () => {
        for await (const m of messages) {
          let data: unknown = null;
          try {
            data = m.json();
          } catch {
            /* not ours */
          }
          handler(m.seq, { subject: m.subject, data });
        }
      })().catch(() => {});
      return () => {
        void messages.close().catch(() => {});
      };
    },
    async close() {
      closed = true;
      if (nc) await nc.drain().catch(() => {});
    },
  };
}

/** In-process stand-in: delivers to subscribers of this process only. */
export function localBus(prefix: string): Bus {
  const handlers: ((msg: BusMessage) => void)[] = [];
  const followers = new Set<(seq: number, msg: BusMessage) => void>();
  // The last messages, for followers resuming from a sequence.
  const recent: { seq: number; msg: BusMessage }[] = [];
  let seq = 0;
  return {
    kind: "local",
    prefix,
    async publish(subject, data) {
      const msg = { subject, data };
      seq++;
      recent.push({ seq, msg });
      if (recent.length > 1000) recent.shift();
      for (const h of handlers) h(msg);
      for (const f of followers) f(seq, msg);
    },
    subscribe(handler) {
      handlers.push(handler);
    },
    state: () => "connected",
    async follow(afterSeq, handler) {
      if (afterSeq !== undefined) for (const r of recent) if (r.seq > afterSeq) handler(r.seq, r.msg);
      followers.add(handler);
      return () => {
        followers.delete(handler);
      };
    },
    async close() {},
  };
}
