// A small OVSDB client (RFC 7047): JSON-RPC 1.0 over TCP, messages sent as concatenated JSON
// values with no framing of their own. It answers the server's `echo` and sends its own, so a
// peer that goes silent is noticed; `request` for list_dbs/monitor/transact, `onUpdate` for a
// monitor's `update` notifications. No maintained OVSDB client exists for Node.
import { connect, type Socket } from "node:net";

/** A message larger than this is no OVSDB this client talks to. */
const MAX_MESSAGE = 16 * 1024 * 1024;

/** Splits a byte stream into the JSON values it carries, one top-level object or array at a time. */
export class JsonStream {
  private buf = "";
  private depth = 0;
  private inString = false;
  private escaped = false;
  private start = -1;
  private scanned = 0;

  /** The complete values so far; throws on bytes that cannot be OVSDB's JSON. */
  push(chunk: string): unknown[] {
    this.buf += chunk;
    const out: unknown[] = [];
    for (let i = this.scanned; i < this.buf.length; i++) {
      const c = this.buf[i]!;
      if (this.inString) {
        if (this.escaped) this.escaped = false;
        else if (c === "\\") this.escaped = true;
        else if (c === '"') this.inString = false;
        continue;
      }
      if (c === '"' && this.depth > 0) this.inString = true;
      else if (c === "{" || c === "[") {
        if (this.depth++ === 0) this.start = i;
      } else if (c === "}" || c === "]") {
        if (--this.depth < 0) throw new Error("unbalanced JSON");
        if (this.depth === 0) out.push(JSON.parse(this.buf.slice(this.start, i + 1)));
      } else if (this.depth === 0 && !/\s/.test(c)) throw new Error(`not a JSON object or array at ${JSON.stringify(c)}`);
    }
    if (this.depth === 0) {
      this.buf = "";
      this.scanned = 0;
    } else {
      this.buf = this.buf.slice(this.start);
      this.start = 0;
      this.scanned = this.buf.length;
      if (this.buf.length > MAX_MESSAGE) throw new Error("message too large");
    }
    return out;
  }
}

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

export class OvsdbError extends Error {
  override name = "OvsdbError";
}

/** One JSON-RPC session with an OVSDB server. */
export class OvsdbClient {
  private readonly socket: Socket;
  private readonly stream = new JsonStream();
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;
  private keepalive: NodeJS.Timeout | undefined;
  private updateHandler: (params: unknown[]) => void = () => {};
  private closeHandler: (err?: Error) => void = () => {};

  private constructor(socket: Socket) {
    this.socket = socket;
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => this.receive(chunk));
    socket.on("error", (err) => this.end(err));
    socket.on("close", () => this.end(new OvsdbError("connection closed")));
  }

  /** Connects; rejects when nothing accepts the connection within `timeoutMs`. */
  static connect(host: string, port: number, timeoutMs: number): Promise<OvsdbClient> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host, port });
      const timer = setTimeout(() => socket.destroy(new Error(`no connection to ${host}:${port} within ${timeoutMs} ms`)), timeoutMs);
      socket.once("connect", () => {
        clearTimeout(timer);
        resolve(new OvsdbClient(socket));
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
      this.request("echo", ["vnm"], everyMs).catch((err: Error) => this.end(new OvsdbError(`no echo: ${err.message}`)));
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
      this.socket.write(JSON.stringify({ method, params, id }));
    });
  }

  close(): void {
    this.end();
  }

  private receive(chunk: string): void {
    let messages: unknown[];
    try {
      messages = this.stream.push(chunk);
    } catch (err) {
      this.end(new OvsdbError(`not OVSDB: ${(err as Error).message}`));
      return;
    }
    for (const m of messages) this.handle(m as Record<string, unknown>);
  }

  private handle(m: Record<string, unknown>): void {
    if (typeof m !== "object" || m === null || Array.isArray(m)) {
      this.end(new OvsdbError("not OVSDB: a message that is not an object"));
    } else if (m["method"] === "echo") {
      this.socket.write(JSON.stringify({ result: m["params"], error: null, id: m["id"] }));
    } else if (m["method"] === "update" && Array.isArray(m["params"])) {
      this.updateHandler(m["params"]);
    } else if (typeof m["id"] === "number" && this.pending.has(m["id"])) {
      const p = this.pending.get(m["id"])!;
      this.pending.delete(m["id"]);
      clearTimeout(p.timer);
      if (m["error"] !== null && m["error"] !== undefined) p.reject(new OvsdbError(`OVSDB error: ${JSON.stringify(m["error"])}`));
      else p.resolve(m["result"]);
    }
  }

  private end(err?: Error): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.keepalive);
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(err ?? new OvsdbError("connection closed"));
    }
    this.pending.clear();
    this.socket.destroy();
    this.closeHandler(err);
  }
}

/** The members of an OVSDB set value (a bare atom is a set of one). */
export function setMembers(value: unknown): unknown[] {
  if (Array.isArray(value) && value[0] === "set" && Array.isArray(value[1])) return value[1];
  return value === undefined ? [] : [value];
}

/** The id of an OVSDB uuid atom (["uuid", "<id>"]). */
export function uuidOf(value: unknown): string | undefined {
  return Array.isArray(value) && value[0] === "uuid" && typeof value[1] === "string" ? value[1] : undefined;
}
