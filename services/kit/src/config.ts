// Environment configuration that fails fast, naming every missing or bad variable at once.
import { messageOf } from "./values.ts";

export class ConfigError extends Error {
  override name = "ConfigError";
}

export interface ConfigItem<V = string> {
  env: string;
  /** Used when the variable is unset or empty; without one the variable is required. */
  default?: string;
  parse?: (raw: string) => V;
  description?: string;
  /** A value not to repeat in an error (a credential, or hashes of them): the error names the variable only. */
  secret?: boolean;
}

// biome-ignore lint/suspicious/noExplicitAny: each item carries its own value type
type Spec = Record<string, ConfigItem<any>>;
type Values<S extends Spec> = { [K in keyof S]: S[K] extends { parse: (raw: string) => infer V } ? V : string };

/**
 * Reads the variables a process needs. A missing required variable, or one that does not
 * parse, throws a ConfigError naming every such variable at once.
 */
export function loadConfig<S extends Spec>(spec: S, source: NodeJS.ProcessEnv = process.env): Values<S> {
  const out: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [key, item] of Object.entries(spec)) {
    const raw = source[item.env];
    const value = raw === undefined || raw === "" ? item.default : raw;
    if (value === undefined) {
      problems.push(`${item.env} is not set${item.description ? ` (${item.description})` : ""}`);
      continue;
    }
    try {
      out[key] = item.parse ? item.parse(value) : value;
    } catch (err) {
      problems.push(`${item.secret ? item.env : `${item.env}=${JSON.stringify(value)}`} is not valid: ${messageOf(err)}`);
    }
  }
  if (problems.length > 0) throw new ConfigError(`configuration: ${problems.join("; ")}`);
  return out as Values<S>;
}

export function parsePort(raw: string): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error("must be a port number in [0, 65535]");
  return n;
}

export function parsePositiveInt(raw: string): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new Error("must be a positive integer");
  return n;
}

export function parseNonNegativeInt(raw: string): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error("must be a whole number, 0 or more");
  return n;
}

export function parseBool(raw: string): boolean {
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new Error("must be true or false");
}

/** An optional URL: "" means not configured. */
export function optional(raw: string): string | undefined {
  return raw === "" ? undefined : raw;
}
