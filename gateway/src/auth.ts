// Authentication at the edge: POST /login (HTTP Basic, optional X-Auth-Project) gets a token
// signed by the identity service (which limits password guessing itself, per user name and
// source); every other API request must carry a user's token (X-Auth-Token or Authorization:
// Bearer; a part's "vnm-internal" token is refused here), and is counted against a per-user and
// a per-source rate limit shared by the gateway replicas through Redis. POST /logout ends the
// caller's token (the user's other sessions go on); POST /logout/all ends every token of the
// caller's user.
import { constants as H } from "node:http2";
import { status as Code } from "@grpc/grpc-js";
import { ApiError, AUTH_SERVICE, type CallerCheck, callerCheck, type Identity, remoteAuthority } from "@vnm/kit";
import type { ApiRequest, ApiResponse, GatewayOptions } from "./context.ts";
import { EdgeError, send } from "./http-error.ts";
import { JSON_TYPE, negotiate, vendor } from "./media.ts";

const TOKEN_TYPE = vendor("Token-v1");
const API_CHALLENGE = 'Bearer realm="vnm"';
const LOGIN_CHALLENGE = 'Basic realm="vnm"';

/** The gateway's checks of callers, and its own token for the identity service. */
export interface Callers {
  check: CallerCheck;
  serviceToken(): Promise<string>;
  /** Logout everywhere: ends every token of the user issued so far, here at once, elsewhere by the change feed. */
  revoke(userId: string): Promise<void>;
  /** Logout: ends this one token of the user (its others go on), here at once, elsewhere by the change feed. */
  end(token: string, userId: string): Promise<void>;
}

export function gatewayCallers(opts: GatewayOptions): Callers {
  const call = async (rpc: string, request: Record<string, unknown>, token?: string) => (await opts.upstream.call(AUTH_SERVICE, rpc, request, opts.callTimeoutMs, token)).response;
  const authority = remoteAuthority(call, "gateway", opts.serviceCredential);
  // The public gateway accepts users' tokens only.
  const check = callerCheck(authority, opts.bus, { internal: false, feedReachesIdentity: opts.feedReachesIdentity });
  return {
    check,
    serviceToken: authority.serviceToken,
    async revoke(userId) {
      await call("RevokeTokens", { id: userId }, await authority.serviceToken());
      check.forget(userId);
    },
    async end(token, userId) {
      await call("EndToken", { token }, await authority.serviceToken());
      check.forget(userId);
    },
  };
}

type Caller = { identity: Identity; token: string };

/**
 * The caller of an API request, or a 401 naming what is wrong: at once when the token is known
 * (checked before, its user's generation known), else once `check` has verified it.
 */
export function authenticate(req: ApiRequest, check: Pick<CallerCheck, "known" | "verify">): Caller | Promise<Caller> {
  const header = req.headers["x-auth-token"];
  let token = typeof header === "string" && header.trim() !== "" ? header.trim() : undefined;
  if (!token) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? "");
    token = m?.[1];
  }
  if (!token) throw EdgeError.challenge("A token is required: log in at /login and send it in X-Auth-Token", API_CHALLENGE);
  const identity = check.known(token);
  return identity ? { identity, token } : verified(token, check.verify);
}

async function verified(token: string, verify: CallerCheck["verify"]): Promise<Caller> {
  const identity = await verify(token);
  if (!identity) throw EdgeError.challenge("The token is not valid, has expired or was revoked; log in again", API_CHALLENGE);
  return { identity, token };
}

/**
 * POST /logout: the caller's token ends, the user's other sessions (another tab, the CLI) go on;
 * POST /logout/all: every token of the caller's user issued so far ends. 204 either way.
 */
export async function logout(req: ApiRequest, res: ApiResponse, caller: Caller, callers: Callers): Promise<void> {
  if (req.method !== "POST") throw EdgeError.methodNotAllowed(req.method, req.path, ["POST"]);
  const who = caller.identity;
  if (who.gen === undefined) throw EdgeError.badRequest("Only a user's token can be logged out");
  if (req.path === "/logout/all") await callers.revoke(who.userId);
  else await callers.end(caller.token, who.userId);
  res.setHeader("Set-Cookie", "sessionId=; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Path=/; HttpOnly; SameSite=Strict");
  res.statusCode = H.HTTP_STATUS_NO_CONTENT;
  res.end();
}

/** HTTP Basic credentials; the user name ends at the first ':'. */
export function basicCredentials(req: ApiRequest): { name: string; password: string } {
  const header = req.headers.authorization;
  if (!header) throw EdgeError.challenge("Authorization header is not set", LOGIN_CHALLENGE);
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
  if (!m) throw EdgeError.challenge("Authorization header does not contain Basic credentials", LOGIN_CHALLENGE);
  const decoded = Buffer.from(m[1]!, "base64").toString("utf8");
  const i = decoded.indexOf(":");
  if (i < 0) throw EdgeError.challenge("Authorization header is not valid", LOGIN_CHALLENGE);
  return { name: decoded.slice(0, i), password: decoded.slice(i + 1) };
}

export interface LoginOptions {
  ttlSeconds: number;
  upstream: GatewayOptions["upstream"];
  callTimeoutMs: number;
  /** The gateway's own token: with it, identity counts the attempt against the client's address. */
  serviceToken(): Promise<string>;
}

/** The identity service's password check: the user, or a 401 (429 with Retry-After when it is busy). */
async function authenticateUpstream(opts: LoginOptions, req: ApiRequest, name: string, password: string): Promise<Record<string, unknown>> {
  const request: Record<string, unknown> = { name, password, ttlSeconds: opts.ttlSeconds, source: req.ip ?? "" };
  const project = req.headers["x-auth-project"];
  if (typeof project === "string" && project !== "") request["project"] = project;
  try {
    return (await opts.upstream.call(AUTH_SERVICE, "Authenticate", request, opts.callTimeoutMs, await opts.serviceToken())).response;
  } catch (err) {
    const e = ApiError.from(err);
    if (e.code === Code.UNAUTHENTICATED) throw EdgeError.challenge(e.message, LOGIN_CHALLENGE);
    if (e.code === Code.RESOURCE_EXHAUSTED) throw EdgeError.tooManyRequests(e.message, e.retryAfter ?? 1);
    throw err;
  }
}

/**
 * Whether a login comes from a browser: a browser's POST names its Origin, and its requests in a
 * secure context carry Sec-Fetch-* headers (fetch() in Node sends Sec-Fetch-Mode too).
 */
function fromBrowser(req: ApiRequest): boolean {
  return req.headers.origin !== undefined || req.headers["sec-fetch-mode"] !== undefined || req.headers["sec-fetch-site"] !== undefined;
}

/**
 * The original's `sessionId` cookie, for the clients that read their token from it (MidoNet's
 * python client does, and nothing else): never for a browser, which would send it to every port
 * of the host. HttpOnly and SameSite=Strict all the same, Secure over https; never read here.
 */
function sessionCookie(req: ApiRequest, token: string, expires: Date): Record<string, string> {
  if (fromBrowser(req)) return {};
  const secure = req.protocol === "https" ? "; Secure" : "";
  return { "Set-Cookie": `sessionId=${token}; Path=/; Expires=${expires.toUTCString()}; HttpOnly; SameSite=Strict${secure}` };
}

export function loginHandler(opts: LoginOptions) {
  return async (req: ApiRequest): Promise<{ status: number; type: string; body: string; headers: Record<string, string> }> => {
    if (req.method !== "POST") throw EdgeError.methodNotAllowed(req.method, "/login", ["POST"]);
    const type = negotiate(req.headers.accept, [TOKEN_TYPE, JSON_TYPE]);
    if (!type) throw EdgeError.notAcceptable([TOKEN_TYPE, JSON_TYPE]);
    const { name, password } = basicCredentials(req);
    const user = await authenticateUpstream(opts, req, name, password);
    const token = String(user["token"]);
    const exp = Number(user["expires"]);
    const expires = new Date(exp * 1000);
    return {
      status: H.HTTP_STATUS_OK,
      type,
      body: JSON.stringify({ key: token, expires: expires.toISOString() }),
      headers: {
        "X-Auth-Token": token,
        "Cache-Control": "no-store",
        ...sessionCookie(req, token, expires),
      },
    };
  };
}

export function sendLogin(res: ApiResponse, r: { status: number; type: string; body: string; headers: Record<string, string> }): void {
  for (const [k, v] of Object.entries(r.headers)) res.setHeader(k, v);
  send(res, r.status, r.type, r.body);
}

/**
 * Key for a user's request count: every token of the user counts against it, so logging in
 * again gives no second allowance. The user id is no credential, so nothing secret sits in Redis.
 */
export function userKey(who: Identity): string {
  return `user:${who.userId}`;
}

/** Key for the request count of a client address (behind trusted proxies, the one they name: trust.ts). */
export function sourceKey(ip: string | undefined): string {
  return `source:${ip ?? ""}`;
}
