// A TCP proxy to a dependency (Redis) that a test can cut (every connection dropped, new ones
// refused), heal, or stall (bytes held, as from a dependency too slow to answer, then delivered
// in order when it resumes).
import { createServer, type Server, type Socket, connect as tcp } from "node:net";

export class TcpProxy {
  private server?: Server;
  private readonly sockets = new Set<Socket>();
  private readonly held: { to: Socket; data: Buffer }[] = [];
  private stalled = false;
  readonly port: number;
  private readonly target: URL;

  constructor(port: number, target: string) {
    this.port = port;
    this.target = new URL(target);
  }

  async open(): Promise<void> {
    this.server = createServer((client) => {
      const upstream = tcp(Number(this.target.port || 6379), this.target.hostname);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on("close", () => this.sockets.delete(s));
        s.on("error", () => {});
      }
      this.forward(client, upstream);
      this.forward(upstream, client);
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
    });
    await new Promise<void>((r) => this.server!.listen(this.port, "127.0.0.1", () => r()));
  }

  private forward(from: Socket, to: Socket): void {
    from.on("data", (data: Buffer) => {
      if (this.stalled) this.held.push({ to, data });
      else to.write(data);
    });
  }

  /** Connections stay open, but nothing gets through until resume(). */
  stall(): void {
    this.stalled = true;
  }

  resume(): void {
    this.stalled = false;
    for (const { to, data } of this.held.splice(0)) if (!to.destroyed) to.write(data);
  }

  async cut(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server!.close(() => r()));
  }
}
