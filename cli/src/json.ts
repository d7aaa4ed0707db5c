// JSON as the API writes it: integers beyond 2^53 stay exact (BigInt), on any Node the CLI runs on.
import { isSafeNumber, parse, stringify } from "lossless-json";

/** Parses JSON, keeping integers that a double cannot hold as BigInt. */
export function parseExact(text: string): unknown {
  return parse(text, null, (n: string) => (isSafeNumber(n) ? Number(n) : /^-?\d+$/.test(n) ? BigInt(n) : Number(n)));
}

/** JSON text with BigInts written as plain integers. */
export function toJson(value: unknown, indent?: number): string {
  return stringify(value, null, indent) ?? "null";
}
