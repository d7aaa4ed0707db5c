// A device nobody controls: a TCP server on loopback that speaks as much OVSDB as a test wants
// and then misbehaves as it is told. Each accepted session runs the test's script.
import { once } from "node:events";
import { createServer, type Server, type Socket } from "node:net";
import { JsonStream } from "../src/ovsdb.ts";

export interface PeerSession {
  socket: Socket;
  /** Requests the service sent on this session, in order. */
  requests: { method: string; params: unknown[]; id: unknown }[];
  /** Resolves with the next request of this method (answering none). */
  next(method: string): Promise<{ method: string; params: unknown[]; id: unknown }>;
  /** Answers echo requests from now on. */
  answerEchoes(): void;
  /**
   * Answers, from now on, what a quiet device with nothing but its switch answers: another
   * monitor (the learned MACs') with no rows, a transaction's selects with no rows and its other
   * operations with an empty result.
   */
  answerTheRest(): void;
  /** Writes raw text; resolves when the socket took it (or closed). */
  write(text: string): Promise<void>;
  /** Answers list_dbs and the monitor as a hardware VTEP at 127.0.0.1 with this switch, then answers echoes and (unless `rest` is false) the rest. */
  handshake(sw?: SwitchSpec, rest?: boolean): Promise<void>;
}

export interface SwitchSpec {
  name: string;
  description?: string;
  ports?: number;
  /** Port names' prefix (a generation, say). */
  portPrefix?: string;
}

/** A monitor's table-updates for one switch at 127.0.0.1 and its ports. */
export function tablesFor(sw: SwitchSpec): Record<string, Record<string, { new: Record<string, unknown> }>> {
  const n = sw.ports ?? 2;
  const ports: Record<string, { new: Record<string, unknown> }> = {};
  const uuids: unknown[] = [];
  for (let i = 0; i < n; i++) {
    const u = `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`;
    uuids.push(["uuid", u]);
    ports[u] = { new: { name: `${sw.portPrefix ?? "eth"}${i}`, description: "" } };
  }
  return {
    Physical_Switch: {
      "10000000-0000-4000-8000-000000000001": {
        new: { name: sw.name, description: sw.description ?? "", management_ips: "127.0.0.1", tunnel_ips: ["set", ["10.0.0.1"]], ports: ["set", uuids] },
      },
    },
    Physical_Port: ports,
  };
}

export class FakeVtep {
  readonly server: Server;
  readonly sessions: PeerSession[] = [];
  port = 0;
  private readonly script: (s: PeerSession) => Promise<void> | void;

  private constructor(script: (s: PeerSession) => Promise<void> | void) {
    this.script = script;
    this.server = createServer((socket) => this.accept(socket));
  }

  static async start(script: (s: PeerSession) => Promise<void> | void): Promise<FakeVtep> {
    const f = new FakeVtep(script);
    f.server.listen(0, "127.0.0.1");
    await once(f.server, "listening");
    f.port = (f.server.address() as { port: number }).port;
    return f;
  }

  private accept(socket: Socket): void {
    socket.setEncoding("utf8");
    socket.on("error", () => {});
    const stream = new JsonStream({ maxChars: 1 << 24, maxDepth: 100, maxValues: 1 << 20 });
    const waiting: { method: string; resolve: (r: PeerSession["requests"][number]) => void }[] = [];
    let echoes = false;
    let rest = false;
    const session: PeerSession = {
      socket,
      requests: [],
      next: (method) =>
        new Promise((resolve) => {
          const seen = session.requests.find((r) => r.method === method && !taken.has(r));
          if (seen) {
            taken.add(seen);
            resolve(seen);
          } else waiting.push({ method, resolve });
        }),
      answerEchoes: () => {
        echoes = true;
      },
      answerTheRest: () => {
        rest = true;
      },
      write: (text) =>
        new Promise((resolve) => {
          if (socket.destroyed || socket.write(text)) return resolve();
          const done = () => {
            socket.off("drain", done).off("close", done);
            resolve();
          };
          socket.on("drain", done).on("close", done);
        }),
      handshake: async (sw = { name: "sw" }, answerRest = true) => {
        const dbs = await session.next("list_dbs");
        await session.write(JSON.stringify({ id: dbs.id, result: ["hardware_vtep"], error: null }));
        const mon = await session.next("monitor");
        await session.write(JSON.stringify({ id: mon.id, result: tablesFor(sw), error: null }));
        session.answerEchoes();
        if (answerRest) session.answerTheRest();
      },
    };
    const taken = new Set<PeerSession["requests"][number]>();
    socket.on("data", (chunk: string) => {
      let msgs: unknown[];
      try {
        msgs = stream.push(chunk);
      } catch {
        return;
      }
      for (const m of msgs as { method: string; params: unknown[]; id: unknown }[]) {
        if (m.method === "echo" && echoes) {
          socket.write(JSON.stringify({ id: m.id, result: m.params, error: null }));
          continue;
        }
        if (rest && (m.method === "monitor" || m.method === "transact")) {
          const ops = (m.params.slice(1) as { op?: string }[]).map((o) => (o.op === "select" ? { rows: [] } : {}));
          socket.write(JSON.stringify({ id: m.id, result: m.method === "monitor" ? {} : ops, error: null }));
          continue;
        }
        session.requests.push(m);
        const i = waiting.findIndex((w) => w.method === m.method);
        if (i >= 0) {
          taken.add(m);
          waiting.splice(i, 1)[0]!.resolve(m);
        }
      }
    });
    this.sessions.push(session);
    Promise.resolve(this.script(session)).catch(() => socket.destroy());
  }

  async close(): Promise<void> {
    for (const s of this.sessions) s.socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
