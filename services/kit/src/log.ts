// Structured logs with pino: one JSON object per line on stdout, `level` as its name and `time`
// in ISO form, each part's fields (service, requestId, ...) on every line it writes. On a
// terminal (or LOG_FORMAT=pretty) the same lines are made readable by pino-pretty instead: time,
// level, part and message first, the other fields after them on the same line.
import { createRequire } from "node:module";
import pino from "pino";
import type PinoPretty from "pino-pretty";

const require = createRequire(import.meta.url);

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

/** Whether log lines are for a person (a terminal, or LOG_FORMAT=pretty) rather than JSON. */
export function prettyLogs(env: NodeJS.ProcessEnv = process.env): boolean {
  const format = env["LOG_FORMAT"];
  return format === "pretty" || (format !== "json" && process.stdout.isTTY === true);
}

/** One prettifier for every logger of the process, writing to stdout synchronously (nothing lost at exit). */
let prettyStream: ReturnType<typeof PinoPretty> | undefined;
/** One buffer for every JSON logger of the process: their lines (and writeOut's) keep their order. */
let jsonStream: ReturnType<typeof pino.destination> | undefined;

const LEVELS: readonly Level[] = ["debug", "info", "warn", "error"];

/** JSON lines wait until this many bytes are waiting (LOG_FLUSH_MS at most), then leave in one write. */
const LOG_BATCH_BYTES = 4096;
/** How long a JSON line may wait to be written. */
const LOG_FLUSH_MS = 100;

/** The level LOG_LEVEL names (none when unset); a name that is no level stops the process. */
function levelOf(name: string | undefined): Level | undefined {
  if (name === undefined || name === "") return undefined;
  const level = LEVELS.find((l) => l === name);
  if (!level) throw new Error(`LOG_LEVEL=${name} is not one of ${LEVELS.join(", ")}`);
  return level;
}

export function createLogger(base: Record<string, unknown>, level: Level = levelOf(process.env["LOG_LEVEL"]) ?? "info"): Logger {
  const options: pino.LoggerOptions = { level, base, timestamp: pino.stdTimeFunctions.isoTime, formatters: { level: (label) => ({ level: label }) } };
  if (!prettyLogs()) {
    // Lines leave in batches: a write to stdout once 4 KiB wait, else at the next flush (every
    // LOG_FLUSH_MS), and at exit (pino flushes its destination then). One write per line cost the
    // gateway 8.6% of its time on a POST (the line of each write's audit record).
    jsonStream ??= batchedStdout();
    return wrap(pino(options, jsonStream));
  }
  // Loaded only for a terminal: a process logging JSON never needs it.
  const pretty = require("pino-pretty") as typeof PinoPretty;
  prettyStream ??= pretty({
    sync: true,
    colorize: process.stdout.isTTY === true,
    translateTime: "SYS:HH:MM:ss",
    ignore: "pid,hostname,service",
    messageFormat: "{if service}{service}: {end}{msg}",
    singleLine: true,
    customLevels: { debug: 20, info: 30, warn: 40, error: 50 },
    useOnlyCustomProps: false,
  });
  return wrap(pino(options, prettyStream));
}

/**
 * Stdout as the JSON loggers write it: lines wait until LOG_BATCH_BYTES are waiting or
 * LOG_FLUSH_MS have passed since the first of them. The wait starts with a line: sonic-boom's own
 * periodic flush wrote (an empty buffer) ten times a second in a quiet process too.
 */
function batchedStdout(): ReturnType<typeof pino.destination> {
  const out = pino.destination({ dest: process.stdout.fd || 1, sync: false, minLength: LOG_BATCH_BYTES });
  let waiting = false;
  const flush = () => {
    // sonic-boom's flush does nothing while a write is on its way (a full pipe holds it up), and
    // once that write is done it writes what waits behind it only past minLength: flush again
    // when it is done (its drain).
    if (Reflect.get(out, "_writing") === true) {
      out.once("drain", flush);
      return;
    }
    waiting = false;
    try {
      out.flush();
    } catch {} // destroyed at exit, after its last flush: nothing waits
  };
  const write = out.write.bind(out);
  out.write = (line: string) => {
    if (!waiting) {
      waiting = true;
      setTimeout(flush, LOG_FLUSH_MS).unref();
    }
    return write(line);
  };
  return out;
}

/**
 * Writes lines for a person to stdout after every log line written so far: JSON lines wait in
 * the loggers' shared buffer (pino writes asynchronously), so these join the same queue.
 */
export function writeOut(text: string): void {
  if (!jsonStream) {
    process.stdout.write(text);
    return;
  }
  jsonStream.write(text);
  // Lines for a person leave now, not with the next batch of log lines.
  jsonStream.flush();
}

/**
 * Lines for the person who started the process (what to do next, a generated password), where
 * that person looks: on stdout when it is a terminal; when stdout is a file or a pipe
 * (`npm start > log`, `npm start | cat`) but stderr is a terminal, on stderr, after the log lines
 * written so far and never into the log; when neither is (a service manager, CI, `> log 2>&1`),
 * on stdout after the log lines written so far. Not /dev/tty: a process whose output is all
 * redirected, a test's included, keeps its lines where its output goes. Returns where they went.
 */
export function tellPerson(text: string): "stdout" | "stderr" {
  if (!process.stdout.isTTY && process.stderr.isTTY) {
    try {
      jsonStream?.flushSync();
    } catch {} // a full pipe: those lines follow a little later
    process.stderr.write(text);
    return "stderr";
  }
  writeOut(text);
  return "stdout";
}

/** Lines held for a launcher's summary (holdNotices); undefined: written at once. */
let held: string[] | undefined;

/**
 * Lines for the person who started the process, not for a log (a generated password): on lines
 * of their own, at once, where that person looks (tellPerson); or, while a launcher holds them,
 * in its summary.
 */
export function notice(lines: string[]): void {
  if (held) held.push(...lines);
  else tellPerson(`\n${lines.join("\n")}\n\n`);
}

/** Holds the notices from now on; the function returned ends the hold and gives them. */
export function holdNotices(): () => string[] {
  held = [];
  return () => {
    const out = held ?? [];
    held = undefined;
    return out;
  };
}
