// The write deadline (VNM_WRITE_DEADLINE_MS): what the gateway has written to a connection must
// have left its memory within that time, else the connection is destroyed. A client that asks
// for a large answer and never reads it (or reads a byte now and then) would otherwise keep the
// answer in the gateway's memory for as long as it keeps the connection open.
import type { Server } from "node:http";
import type { Socket } from "node:net";

/** A connection with bytes waiting: how many it had been given when they were first seen waiting, and when. */
interface Mark {
  bytes: number;
  at: number;
}

/**
 * Watches every connection of `server`: once a second (or a quarter of `ms`, if less) each one
 * with bytes still waiting in the gateway is looked at; if the bytes that were waiting when it
 * was first seen so have not all gone out to the network within `ms`, the connection is
 * destroyed (its answers' memory goes with it; a request under way sees its connection close).
 * A connection that keeps up costs a look at a number. `cut` hears of each one destroyed.
 */
export function writeDeadline(server: Server, ms: number, cut: (socket: Socket) => void = () => {}): { close(): void } {
  const sockets = new Set<Socket>();
  const marks = new Map<Socket, Mark>();
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => {
      sockets.delete(socket);
      marks.delete(socket);
    });
  });
  const sweep = () => {
    const now = performance.now();
    for (const socket of sockets) {
      const waiting = socket.writableLength;
      if (waiting === 0) {
        if (marks.size > 0) marks.delete(socket);
        continue;
      }
      // bytesWritten counts what is waiting too: what has gone out is the difference.
      const given = socket.bytesWritten;
      const gone = given - waiting;
      const mark = marks.get(socket);
      if (!mark || gone >= mark.bytes) marks.set(socket, { bytes: given, at: now });
      else if (now - mark.at >= ms) {
        marks.delete(socket);
        socket.destroy();
        cut(socket);
      }
    }
  };
  const timer = setInterval(sweep, Math.max(50, Math.min(1_000, ms / 4)));
  timer.unref();
  return { close: () => clearInterval(timer) };
}
