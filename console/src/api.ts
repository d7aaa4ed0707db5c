// The API as the console calls it: same origin, the token in X-Auth-Token (never a cookie:
// /login sets none, and requests go with credentials "omit"), the token itself in this tab's
// sessionStorage only.
import { memberOf, stringMember } from "@vnm/kit/values";

export interface Identity {
  name: string;
  role: "admin" | "tenant_admin" | "tenant_user";
  tenantId: string | null;
  /** Seconds since the epoch. */
  exp: number;
}

export interface Violation {
  property: string;
  message: string;
}

export class ApiError extends Error {
  readonly status: number;
  readonly violations: Violation[];
  constructor(status: number, message: string, violations: Violation[] = []) {
    super(message);
    this.status = status;
    this.violations = violations;
  }
}

/** The gateway did not answer at all (the network, or the gateway down): the pages say "offline" and retry. */
export class OfflineError extends Error {}

/** An error that waiting may cure: no answer, or a dependency down (5xx). */
export function isUnavailable(err: unknown): boolean {
  return err instanceof OfflineError || (err instanceof ApiError && err.status >= 500);
}

export interface Answer {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: the API's JSON, read by field names from the catalog
  body: any;
}

const KEY = "vnm.session";

let token: string | undefined = sessionStorage.getItem(KEY) ?? undefined;
const listeners = new Set<() => void>();
/** Why the session ended when the person did not log out (shown on the login page). */
let endedBecause: string | undefined;

/** Why the last session ended without a logout, if it did. */
export function sessionEndReason(): string | undefined {
  return endedBecause;
}

export const SESSION_ENDED = "Your session has ended: it was logged out elsewhere or has expired. Log in again to go on.";
export const SESSION_EXPIRED = "Your session has expired. Log in again to go on.";

/** Forgets the token for a reason the login page gives (a 401 on a call, the token's expiry). */
export function endSession(reason: string): void {
  if (!token) return;
  endedBecause = reason;
  setToken(undefined);
}

const ROLES: readonly Identity["role"][] = ["admin", "tenant_admin", "tenant_user"];

/** The violations of an error body: each with its property and message (others left out). */
function violationsOf(v: unknown): Violation[] {
  if (!Array.isArray(v)) return [];
  return v.flatMap((x: unknown) => {
    const property = stringMember(x, "property");
    const message = stringMember(x, "message");
    return property !== undefined && message !== undefined ? [{ property, message }] : [];
  });
}

/** The claims of a token (its signature is the gateway's to check; these only shape the pages). */
function claimsOf(t: string): Identity | undefined {
  try {
    const part = t.split(".")[1]!.replace(/-/g, "+").replace(/_/g, "/");
    const bytes = Uint8Array.from(atob(part), (c) => c.charCodeAt(0));
    const c: unknown = JSON.parse(new TextDecoder().decode(bytes));
    const name = stringMember(c, "name");
    const role = ROLES.find((r) => r === memberOf(c, "role"));
    const exp = memberOf(c, "exp");
    if (name === undefined || !role || typeof exp !== "number") return undefined;
    return { name, role, tenantId: stringMember(c, "tid") ?? null, exp };
  } catch {
    return undefined;
  }
}

export function currentToken(): string | undefined {
  return token;
}

export function identity(): Identity | undefined {
  const who = token ? claimsOf(token) : undefined;
  return who && who.exp * 1000 > Date.now() ? who : undefined;
}

export function onSessionChange(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

function setToken(t: string | undefined): void {
  token = t;
  if (t) sessionStorage.setItem(KEY, t);
  else sessionStorage.removeItem(KEY);
  for (const l of listeners) l();
}

/** JSON with 64-bit integers beyond a double's exact range kept as their digits. */
function parse(text: string): unknown {
  return JSON.parse(text, (_k, v, ctx?: { source?: string }) =>
    typeof v === "number" && !Number.isSafeInteger(v) && ctx?.source && /^-?\d+$/.test(ctx.source) ? ctx.source : v,
  );
}

async function answer(res: Response): Promise<Answer> {
  const text = await res.text();
  let body: unknown;
  try {
    body = text ? parse(text) : undefined;
  } catch {
    body = undefined;
  }
  if (res.status >= 400) {
    if (res.status === 401 && token) endSession(SESSION_ENDED);
    throw new ApiError(res.status, stringMember(body, "message") ?? `The gateway answered ${res.status}`, violationsOf(memberOf(body, "violations")));
  }
  return { status: res.status, headers: res.headers, body };
}

export async function login(name: string, password: string, tenant: string): Promise<void> {
  const headers: Record<string, string> = { accept: "application/json", authorization: `Basic ${btoa(String.fromCharCode(...new TextEncoder().encode(`${name}:${password}`)))}` };
  if (tenant.trim() !== "") headers["x-auth-project"] = tenant.trim();
  const res = await reach("/login", { method: "POST", headers, credentials: "omit" });
  const a = await answer(res);
  const key = stringMember(a.body, "key");
  if (key === undefined) throw new ApiError(a.status, "The gateway's answer to the login carries no token");
  endedBecause = undefined;
  setToken(key);
}

/**
 * Ends this tab's token (POST /logout; the user's other sessions go on), or with `everywhere`
 * every token of the user (POST /logout/all: other tabs, the CLI), and forgets it whatever the answer.
 */
export async function logout(everywhere = false): Promise<void> {
  try {
    if (token) await call("POST", everywhere ? "/logout/all" : "/logout");
  } catch {
    // forgotten below all the same
  }
  endedBecause = undefined;
  setToken(undefined);
}

export async function call(method: string, path: string, body?: unknown, extra: Record<string, string> = {}): Promise<Answer> {
  const headers: Record<string, string> = { accept: "application/json", ...extra };
  if (token) headers["x-auth-token"] = token;
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await reach(path, { method, headers, credentials: "omit", body: body === undefined ? undefined : JSON.stringify(body) });
  return answer(res);
}

/** fetch, its network failure an OfflineError. */
async function reach(path: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(path, init);
  } catch (err) {
    throw new OfflineError("The gateway does not answer", { cause: err });
  }
}
