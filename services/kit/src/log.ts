// Structured logs: one JSON object per line on stdout.

export type Level = "debug" | "info" | "warn" | "error";
const order: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

function errorFields(value: unknown): unknown {
  if (value instanceof Error) return { name: value.name, message: value.message, stack: value.stack };
  return value;
}

export function createLogger(
  base: Record<string, unknown>,
  level: Level = (process.env["LOG_LEVEL"] as Level | undefined) ?? "info",
): Logger {
  const min = order[level] ?? order.info;
  const write = (lvl: Level, msg: string, fields?: Record<string, unknown>) => {
    if (order[lvl] < min) return;
    const rec: Record<string, unknown> = { time: new Date().toISOString(), level: lvl, ...base, msg };
    if (fields) for (const [k, v] of Object.entries(fields)) rec[k] = errorFields(v);
    process.stdout.write(`${JSON.stringify(rec)}\n`);
  };
  return {
    debug: (m, f) => write("debug", m, f),
    info: (m, f) => write("info", m, f),
    warn: (m, f) => write("warn", m, f),
    error: (m, f) => write("error", m, f),
    child: (fields) => createLogger({ ...base, ...fields }, level),
  };
}
