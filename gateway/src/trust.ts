// Which hops of X-Forwarded-For the gateway believes (VNM_TRUST_PROXY): none, a number of
// proxies in front of it, or the proxies' addresses. The client's address is the right-most one
// no trusted proxy could have written: every entry left of it the client may have written
// itself, so believing the left-most (as `true` did) let a client choose its own address.
// proxy-addr does the reading, the same one express uses for its own requests.
import { messageOf } from "@vnm/kit";
import type { IncomingMessage } from "node:http";
import proxyAddr from "proxy-addr";

/** VNM_TRUST_PROXY as read: `false`, a hop count, or the proxies' addresses and CIDRs. */
export type TrustProxy = false | number | string[];

/** Whether the address at hop `i` (0: the socket's peer, then X-Forwarded-For right to left) is a trusted proxy. */
export type TrustFn = (addr: string, i: number) => boolean;

/**
 * Reads VNM_TRUST_PROXY: `false` (the default), a number of proxies in front of the gateway
 * (`1`: a load balancer or ingress that appends its peer), or comma-separated addresses and
 * CIDRs of the proxies (`10.0.0.0/8, fd00::/8`; proxy-addr's `loopback`, `linklocal`,
 * `uniquelocal` too). `true` (trust every hop) is refused: it is how a client chose its address.
 */
export function parseTrustProxy(raw: string): TrustProxy {
  const value = raw.trim();
  if (/^(false|no|off)$/i.test(value)) return false;
  if (/^\d+$/.test(value)) {
    const hops = Number(value);
    if (hops > 32) throw new Error("a hop count of more than 32 proxies is not believable");
    return hops === 0 ? false : hops;
  }
  if (/^(true|yes|on)$/i.test(value)) {
    throw new Error("trusting every proxy lets a client choose its own address (X-Forwarded-For's left-most entry is its own text): give the number of proxies in front of the gateway (1) or their addresses or CIDRs");
  }
  const list = value.split(",").map((s) => s.trim());
  if (list.some((s) => s === "")) throw new Error("must be false, a number of proxies, or comma-separated proxy addresses or CIDRs");
  try {
    proxyAddr.compile(list);
  } catch (err) {
    throw new Error(`must be false, a number of proxies, or comma-separated proxy addresses or CIDRs: ${messageOf(err)}`);
  }
  return list;
}

/** The trust function of a setting, or undefined for none (no forwarded header is read). */
export function trustFunction(setting: TrustProxy): TrustFn | undefined {
  if (setting === false) return undefined;
  if (typeof setting === "number") return (_addr, i) => i < setting;
  return proxyAddr.compile(setting);
}

/** The client's address: the socket's peer, or behind trusted proxies the right-most address none of them is. */
export function clientAddress(req: IncomingMessage, trust: TrustFn | undefined): string | undefined {
  if (!trust) return req.socket.remoteAddress;
  return proxyAddr(req, trust);
}
