// Graceful shutdown on SIGTERM/SIGINT: run the registered closers once, then exit.
import type { Logger } from "./log.ts";

const closers: (() => Promise<void>)[] = [];
let installed = false;
let stopping = false;

export function onShutdown(close: () => Promise<void>, log: Logger): void {
  closers.push(close);
  if (installed) return;
  installed = true;
  const handler = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info("shutting down", { signal });
    const hard = setTimeout(() => process.exit(1), 10_000);
    hard.unref();
    Promise.allSettled(closers.map((c) => c())).then(() => process.exit(0));
  };
  process.once("SIGTERM", () => handler("SIGTERM"));
  process.once("SIGINT", () => handler("SIGINT"));
}
