// Structured logs with pino: one JSON object per line on stdout, `level` as its name and `time`
// in ISO form, each part's fields (service, requestId, ...) on every line it writes.
import pino from "pino";

export type Level = "debug" | "info" | "warn" | "error";

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

/** Errors under any key are written with their name, message and stack. */
function withErrors(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) out[k] = v instanceof Error ? { name: v.name, message: v.message, stack: v.stack } : v;
  return out;
}

function wrap(p: pino.Logger): Logger {
  // A level that is off costs a check, not a copy of the fields.
  const at = (level: Level) => (msg: string, fields?: Record<string, unknown>) => {
    if (!p.isLevelEnabled(level)) return;
    if (fields) p[level](withErrors(fields), msg);
    else p[level](msg);
  };
  return { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error"), child: (fields) => wrap(p.child(fields)) };
}

export function createLogger(base: Record<string, unknown>, level: Level = (process.env["LOG_LEVEL"] as Level | undefined) ?? "info"): Logger {
  return wrap(
    pino({
      level,
      base,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    }),
  );
}
