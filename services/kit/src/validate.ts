// Validation shared by every service: zod schemas for the API's value formats (docs/api.md, "Fields"), and
// the translation of zod issues into field violations ("must ..." messages).
import { z } from "zod";
import { ApiError, type Violation } from "./errors.ts";

const UUID_RE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export function isUuid(value: unknown): value is string {
  return typeof value === "string" && UUID_RE.test(value);
}

/** A UUID, returned in lower case. */
export const uuid = () =>
  z
    .string()
    .regex(UUID_RE, "must be a UUID")
    .transform((s) => s.toLowerCase());

/** Free text: well-formed Unicode without NUL, at most `max` characters (code points). */
export const text = (max = 255) =>
  z
    .string()
    .refine((s) => s.isWellFormed() && !s.includes("\u0000"), "must be valid Unicode text without NUL characters")
    .refine((s) => [...s].length <= max, `must be at most ${max} characters long`);

/** An integer in [min, max]. */
export const int = (min: number, max: number) =>
  z
    .number()
    .int("must be an integer")
    .min(min, `must be between ${min} and ${max}`)
    .max(max, `must be between ${min} and ${max}`);

/**
 * Checks `input` against `schema`; a failure becomes a 400 with one violation per offending
 * top-level field (the JSON field name clients sent).
 */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const seen = new Map<string, Violation>();
  for (const issue of result.error.issues) {
    const property = issue.path.length > 0 ? String(issue.path[0]) : "body";
    if (seen.has(property)) continue;
    const message =
      issue.code === "invalid_type" && issue.input === undefined ? "may not be null" : issue.message;
    seen.set(property, { property, message });
  }
  throw ApiError.invalid([...seen.values()]);
}

/** A path id that is not a UUID names nothing: 404, as for a missing item. */
export function pathId(id: unknown, kind: string): string {
  if (!isUuid(id)) throw ApiError.noItem(kind, id);
  return id.toLowerCase();
}

// ---- network values -------------------------------------------------------------------

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const MAC = /^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$/;

export function isIpv4(value: string): boolean {
  return IPV4.test(value);
}

/** An IPv6 address in its RFC 5952 form (lower case, longest zero run compressed), or undefined. */
export function canonicalIpv6(value: string): string | undefined {
  if (!/^[0-9A-Fa-f:.]+$/.test(value) || !value.includes(":")) return undefined;
  try {
    const host = new URL(`http://[${value}]/`).hostname;
    return host.slice(1, -1);
  } catch {
    return undefined;
  }
}

/** The 32-bit value of a dotted quad. */
export function ipv4ToInt(value: string): number {
  return value.split(".").reduce((acc, part) => acc * 256 + Number(part), 0);
}

/** Whether `ip` lies inside `prefix`/`length`. */
export function ipv4InSubnet(ip: string, prefix: string, length: number): boolean {
  if (length === 0) return true;
  const shift = 32 - length;
  return Math.floor(ipv4ToInt(ip) / 2 ** shift) === Math.floor(ipv4ToInt(prefix) / 2 ** shift);
}

/** A dotted-quad IPv4 address. */
export const ipv4 = () => z.string().regex(IPV4, "must be an IPv4 address in dotted-quad form, e.g. 10.0.0.1");

/** An IPv6 address in any valid form, returned in compressed form. */
export const ipv6 = () =>
  z.string().transform((s, ctx) => {
    const c = canonicalIpv6(s);
    if (c === undefined) {
      ctx.addIssue({ code: "custom", message: "must be a valid IPv6 address" });
      return z.NEVER;
    }
    return c;
  });

/** A MAC address: six groups of two hex digits separated by ':', returned in lower case. */
export const mac = () =>
  z
    .string()
    .regex(MAC, "must be six groups of two hex digits separated by ':', e.g. 02:00:00:00:00:01")
    .transform((s) => s.toLowerCase());

/** A MAC written with ':' or '-' (path segments), in lower case with ':'; undefined if malformed. */
export function parseMac(value: string): string | undefined {
  const s = value.replace(/-/g, ":");
  return MAC.test(s) ? s.toLowerCase() : undefined;
}
