// Graceful shutdown on SIGTERM/SIGINT, or when the parent that started this process with an IPC
// channel goes away (a launcher killed with SIGKILL leaves no orphans): run the registered
// closers once, the last registered first (a gateway before the services it calls, the
// services before their database), then exit 0; a hard exit after 10 s.
import type { Logger } from "./log.ts";

const closers: { close: () => Promise<void>; log: Logger }[] = [];
let installed = false;
let stopping = false;

async function closeAll(reason: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  closers[0]?.log.info("shutting down", { reason });
  const hard = setTimeout(() => process.exit(1), 10_000);
  hard.unref();
  for (const c of [...closers].reverse()) {
    await c.close().catch((err: unknown) => c.log.warn("stopped with an error", { err: (err as Error).message }));
  }
  process.exit(0);
}

export function onShutdown(close: () => Promise<void>, log: Logger): void {
  closers.push({ close, log });
  if (installed) return;
  installed = true;
  process.once("SIGTERM", () => void closeAll("SIGTERM"));
  process.once("SIGINT", () => void closeAll("SIGINT"));
  if (process.send) process.once("disconnect", () => void closeAll("parent gone"));
}
