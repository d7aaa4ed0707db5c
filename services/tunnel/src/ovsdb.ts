// A small OVSDB client (RFC 7047): JSON-RPC 1.0 over TCP, messages sent as concatenated JSON
// values with no framing of their own. It answers the server's `echo` and sends its own, so a
// peer that goes silent is noticed; `request` for list_dbs/monitor/transact, `onUpdate` for a
// monitor's `update` notifications. No maintained OVSDB client exists for Node.
//
// The peer is a device nobody here controls, so nothing it sends is trusted: every message is
// measured before it is parsed (bytes, nesting depth, number of values), the time spent on its
// input is rationed, what it leaves unread is bounded, and whatever goes wrong while handling
// its input ends that session with a PeerError; nothing escapes into the process.
import { connect, type Socket } from "node:net";
import { isRecord, messageOf } from "@vnm/kit/values";

/** What one message from a peer may be. */
export interface MessageLimits {
  /** Characters in one message. */
  maxChars: number;
  /** Nesting depth of objects and arrays (Open vSwitch's own parser refuses deeper than 1,000). */
  maxDepth: number;
  /** Objects and arrays in one message. */
  maxValues: number;
}

export const MESSAGE_LIMITS: MessageLimits = { maxChars: 4 * 1024 * 1024, maxDepth: 1_000, maxValues: 200_000 };

/** Why a session with a peer ended on the peer's account; `reason` is a metric label. */
export type PeerFault =
  | "too_large"
  | "too_deep"
  | "too_many_values"
  | "too_many_rows"
  | "over_budget"
  | "not_json"
  | "bad_message"
  | "not_vtep"
  | "no_answer"
  | "not_reading"
  | "no_echo"
  | "refused_write"
  | "internal";

/** The peer broke the protocol or a bound; the session ends in the `error` state. */
export class PeerError extends Error {
  override name = "PeerError";
  readonly reason: PeerFault;
  constructor(reason: PeerFault, message: string) {
    super(message);
    this.reason = reason;
  }
}

export class OvsdbError extends Error {
  override name = "OvsdbError";
}

/**
 * Splits a character stream into the JSON values it carries, one top-level object or array at a
 * time, refusing any message over the limits before JSON.parse sees it.
 */
export class JsonStream {
  private buf = "";
  private depth = 0;
  private values = 0;
  private inString = false;
  private escaped = false;
  private start = -1;
  private scanned = 0;
  private readonly limits: MessageLimits;

  constructor(limits: MessageLimits = MESSAGE_LIMITS) {
    this.limits = limits;
  }

  /** The complete values so far; throws a PeerError on bytes that cannot be OVSDB's JSON. */
  push(chunk: string): unknown[] {
    this.buf += chunk;
    const out: unknown[] = [];
    const { maxChars, maxDepth, maxValues } = this.limits;
    for (let i = this.scanned; i < this.buf.length; i++) {
      const c = this.buf.charCodeAt(i);
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (c === 0x5c) this.escaped = true; // backslash
        else if (c === 0x22) this.inString = false; // "
        continue;
      }
      if (c === 0x22 && this.depth > 0) this.inString = true;
      else if (c === 0x7b || c === 0x5b) {
        // { [
        if (this.depth === 0) {
          this.start = i;
          this.values = 0;
        }
        if (++this.depth > maxDepth) throw new PeerError("too_deep", `a message nested deeper than ${maxDepth}`);
        if (++this.values > maxValues) throw new PeerError("too_many_values", `a message of more than ${maxValues} objects and arrays`);
      } else if (c === 0x7d || c === 0x5d) {
        // } ]
        if (--this.depth < 0) throw new PeerError("not_json", "unbalanced JSON");
        if (this.depth === 0) {
          if (i + 1 - this.start > maxChars) throw new PeerError("too_large", `a message of more than ${maxChars} characters`);
          try {
            out.push(JSON.parse(this.buf.slice(this.start, i + 1)));
          } catch (err) {
            throw new PeerError("not_json", `not JSON: ${messageOf(err).slice(0, 120)}`);
          }
        }
      } else if (this.depth === 0 && c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) {
        throw new PeerError("not_json", `not a JSON object or array at ${JSON.stringify(this.buf[i])}`);
      }
    }
    if (this.depth === 0) {
      this.buf = "";
      this.scanned = 0;
    } else {
      this.buf = this.buf.slice(this.start);
      this.start = 0;
      this.scanned = this.buf.length;
      if (this.buf.length > maxChars) throw new PeerError("too_large", `a message of more than ${maxChars} characters`);
    }
    return out;
  }
}

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

/** What the client may spend on one peer. */
export interface PeerBudget {
  /** Share of one core this peer's input may take, measured over `windowMs`; beyond it reading pauses. */
  busyShare: number;
  windowMs: number;
  /** Characters written to the peer and not yet taken by it; beyond it the peer is dropped. */
  maxUnread: number;
}

// A quarter of a core in windows of 50 ms: a flood is read in bursts of about 12 ms, so the
// calls the service answers meanwhile wait no longer than that.
export const PEER_BUDGET: PeerBudget = { busyShare: 0.25, windowMs: 50, maxUnread: 1024 * 1024 };

/** A short, bounded rendering of something a peer sent, for an error message or a log line. */
export function excerpt(value: unknown, max = 200): string {
  let text: string;
  try {
    text = typeof value === "string" ? value : (JSON.stringify(value) ?? String(value));
  } catch {
    text = "(unprintable)";
  }
  return text.length > max ? `${text.slice(0, max)}...` : text;
}

/** One JSON-RPC session with an OVSDB server. */
export class OvsdbClient {
  private readonly socket: Socket;
  private readonly stream: JsonStream;
  private readonly budget: PeerBudget;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;
  private keepalive: NodeJS.Timeout | undefined;
  private resume: NodeJS.Timeout | undefined;
  private windowStart = 0;
  private busyMs = 0;
  private updateHandler: (params: unknown[]) => void = () => {};
  private closeHandler: (err?: Error) => void = () => {};

  private constructor(socket: Socket, limits: MessageLimits, budget: PeerBudget) {
    this.socket = socket;
    this.stream = new JsonStream(limits);
    this.budget = budget;
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => this.receive(chunk));
    socket.on("error", (err) => this.end(err));
    socket.on("close", () => this.end(new OvsdbError("connection closed")));
  }

  /** Connects; rejects when nothing accepts the connection within `timeoutMs`. */
  static connect(host: string, port: number, timeoutMs: number, limits = MESSAGE_LIMITS, budget = PEER_BUDGET): Promise<OvsdbClient> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host, port });
      const timer = setTimeout(() => socket.destroy(new Error(`no connection to ${host}:${port} within ${timeoutMs} ms`)), timeoutMs);
      socket.once("connect", () => {
        clearTimeout(timer);
        resolve(new OvsdbClient(socket, limits, budget));
      });
      socket.once("error", (err) => {
        clearTimeout(timer);
        reject(err);
      });
    });
  }

  onUpdate(handler: (params: unknown[]) => void): void {
    this.updateHandler = handler;
  }

  onClose(handler: (err?: Error) => void): void {
    this.closeHandler = handler;
  }

  /** Sends an `echo` every `everyMs`; a peer that does not answer within it is dropped. */
  startKeepalive(everyMs: number): void {
    this.keepalive = setInterval(() => {
      this.request("echo", ["vnm"], everyMs).catch((err: Error) => this.end(new PeerError("no_echo", `no echo: ${err.message}`)));
    }, everyMs);
    this.keepalive.unref();
  }

  request(method: string, params: unknown[], timeoutMs: number): Promise<unknown> {
    if (this.closed) return Promise.reject(new OvsdbError("connection closed"));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new OvsdbError(`no answer to ${method} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      this.send({ method, params, id });
    });
  }

  /** Ends the session; `err` says why (a PeerError when the peer is to blame). */
  close(err?: Error): void {
    this.end(err);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Writes a message, unless the peer already leaves too much unread: then it is dropped. */
  private send(message: unknown): void {
    if (this.closed) return;
    if (this.socket.writableLength > this.budget.maxUnread) {
      this.end(new PeerError("not_reading", `the peer left more than ${this.budget.maxUnread} characters unread`));
      return;
    }
    this.socket.write(JSON.stringify(message));
  }

  /** Handles a chunk of the peer's input; nothing thrown here leaves this method. */
  private receive(chunk: string): void {
    if (this.closed) return;
    const started = performance.now();
    try {
      for (const m of this.stream.push(chunk)) {
        this.handle(m);
        if (this.closed) return;
      }
    } catch (err) {
      this.end(err instanceof PeerError ? err : new PeerError("internal", `handling the peer's input failed: ${messageOf(err)}`));
      return;
    }
    this.ration(performance.now() - started);
  }

  /** Pauses reading for the rest of the window once this peer took its share of the core. */
  private ration(spentMs: number): void {
    const now = performance.now();
    if (now - this.windowStart >= this.budget.windowMs) {
      this.windowStart = now;
      this.busyMs = 0;
    }
    this.busyMs += spentMs;
    if (this.busyMs < this.budget.busyShare * this.budget.windowMs) return;
    this.socket.pause();
    this.resume = setTimeout(
      () => {
        this.windowStart = performance.now();
        this.busyMs = 0;
        if (!this.closed) this.socket.resume();
      },
      Math.max(1, this.windowStart + this.budget.windowMs - now),
    );
  }

  private handle(m: unknown): void {
    if (!isRecord(m)) throw new PeerError("bad_message", "a message that is not an object");
    const msg = m;
    if (msg["method"] === "echo") {
      this.send({ result: msg["params"], error: null, id: msg["id"] });
    } else if (msg["method"] === "update") {
      if (!Array.isArray(msg["params"])) throw new PeerError("bad_message", "an update without params");
      this.updateHandler(msg["params"]);
    } else if (typeof msg["id"] === "number" && this.pending.has(msg["id"])) {
      const p = this.pending.get(msg["id"])!;
      this.pending.delete(msg["id"]);
      clearTimeout(p.timer);
      if (msg["error"] !== null && msg["error"] !== undefined) p.reject(new OvsdbError(`OVSDB error: ${excerpt(msg["error"])}`));
      else p.resolve(msg["result"]);
    }
  }

  private end(err?: Error): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.keepalive);
    clearTimeout(this.resume);
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(err ?? new OvsdbError("connection closed"));
    }
    this.pending.clear();
    this.socket.destroy();
    this.closeHandler(err);
  }
}
