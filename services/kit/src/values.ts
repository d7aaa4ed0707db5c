// Values whose type nothing declares (a thrown value, a bus message's data, a peer's answer),
// read by checking what they are rather than by asserting a type.

/** A thrown value's message: an Error's, else the value as text. */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Whether a value is an object with members (not null, not an array). */
export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A member of a value that is an object, else undefined. */
export function memberOf(v: unknown, name: string): unknown {
  return isRecord(v) ? v[name] : undefined;
}

/** A member of a value that is an object, when it is a string. */
export function stringMember(v: unknown, name: string): string | undefined {
  const m = memberOf(v, name);
  return typeof m === "string" ? m : undefined;
}
