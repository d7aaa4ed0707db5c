// VNM_TRUST_PROXY as read (trust.ts): a hop count or the proxies' addresses; `true` refused.
import type { IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
import { clientAddress, parseTrustProxy, trustFunction } from "./trust.ts";

const request = (peer: string, forwardedFor?: string) =>
  ({ socket: { remoteAddress: peer }, connection: { remoteAddress: peer }, headers: forwardedFor === undefined ? {} : { "x-forwarded-for": forwardedFor } }) as unknown as IncomingMessage;

describe("VNM_TRUST_PROXY", () => {
  it("reads false, a hop count, or addresses and CIDRs", () => {
    expect(parseTrustProxy("false")).toBe(false);
    expect(parseTrustProxy("0")).toBe(false);
    expect(parseTrustProxy("2")).toBe(2);
    expect(parseTrustProxy("10.0.0.0/8, fd00::/8,192.0.2.1")).toEqual(["10.0.0.0/8", "fd00::/8", "192.0.2.1"]);
    expect(parseTrustProxy("loopback")).toEqual(["loopback"]);
  });

  it.each(["true", "yes", "10.0.0.0/33", "not-an-address", "10.0.0.0/8,", "99"])("refuses %s", (raw) => {
    expect(() => parseTrustProxy(raw)).toThrow();
  });

  it("takes the right-most address no trusted proxy is", () => {
    const forwarded = "1.1.1.1, 203.0.113.9, 10.0.0.7";
    expect(clientAddress(request("10.0.0.1", forwarded), trustFunction(false))).toBe("10.0.0.1");
    expect(clientAddress(request("10.0.0.1", forwarded), trustFunction(1))).toBe("10.0.0.7");
    expect(clientAddress(request("10.0.0.1", forwarded), trustFunction(2))).toBe("203.0.113.9");
    expect(clientAddress(request("10.0.0.1", forwarded), trustFunction(["10.0.0.0/8"]))).toBe("203.0.113.9");
    // A peer that is no trusted proxy: its headers are not read.
    expect(clientAddress(request("198.51.100.1", forwarded), trustFunction(["10.0.0.0/8"]))).toBe("198.51.100.1");
  });
});
