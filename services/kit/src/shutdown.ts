// Graceful shutdown on SIGTERM/SIGINT, or when the parent that started this process with an IPC
// channel goes away (a launcher killed with SIGKILL leaves no orphans): run the registered
// closers once, the last registered first (a gateway before the services it calls, the
// services before their database), then exit 0; a hard exit once the longest drain bound a
// closer declared (10 s when none did) and 5 s more have passed. A signal repeated meanwhile
// (Ctrl-C reaches a process twice under npm) changes nothing.
import type { Logger } from "./log.ts";
import { READY_MESSAGE } from "./repo.ts";
import { messageOf } from "./values.ts";

const closers: { close: () => Promise<void>; log: Logger }[] = [];
let installed = false;
let stopping = false;
let boundMs = 10_000;

/** How long a part may take to finish its work under way when it stops (VNM_DRAIN_MS). */
export const DEFAULT_DRAIN_MS = 10_000;

async function closeAll(reason: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  closers[0]?.log.info("shutting down", { reason });
  const hard = setTimeout(() => process.exit(1), boundMs + 5_000);
  hard.unref();
  for (const c of [...closers].reverse()) {
    await c.close().catch((err: unknown) => c.log.warn("stopped with an error", { err: messageOf(err) }));
  }
  process.exit(0);
}

/** Runs `close` at shutdown; `drainMs`: how long it may wait for work under way to finish. */
export function onShutdown(close: () => Promise<void>, log: Logger, drainMs?: number): void {
  closers.push({ close, log });
  if (drainMs !== undefined) boundMs = Math.max(boundMs, drainMs);
  if (installed) return;
  installed = true;
  // \`on\`, not \`once\`: Ctrl-C on a terminal signals the whole process group, and npm passes its
  // own SIGINT on to its child too. With the handler gone after the first, Node's default
  // action (death by signal) met the second one, whenever it came after the first was handled.
  process.on("SIGTERM", () => void closeAll("SIGTERM"));
  process.on("SIGINT", () => void closeAll("SIGINT"));
  if (process.send) process.once("disconnect", () => void closeAll("parent gone"));
}

/** Tells the launcher that started this process, if any, that it takes requests now. */
export function announceReady(): void {
  if (process.send && process.connected) process.send(READY_MESSAGE);
}
