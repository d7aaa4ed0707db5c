// Validation shared by every service: zod schemas for the interface's value formats, and
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
  if (!isUuid(id)) throw ApiError.notFound(`There is no ${kind} with ID ${String(id)}.`);
  return id.toLowerCase();
}
