// Which management addresses a VTEP may have, and the one form each is stored in.
import { describe, expect, it } from "vitest";
import { AddressPolicy, canonicalAddress } from "./address-policy.ts";

describe("canonicalAddress", () => {
  it("stores IPv4 as is, IPv6 in RFC 5952 form, and IPv4-mapped IPv6 as IPv4", () => {
    expect(canonicalAddress("192.0.2.1")).toBe("192.0.2.1");
    expect(canonicalAddress("2001:DB8:0:0:0:0:0:1")).toBe("2001:db8::1");
    expect(canonicalAddress("::ffff:127.0.0.1")).toBe("127.0.0.1");
    expect(canonicalAddress("::FFFF:7f00:1")).toBe("127.0.0.1");
    expect(canonicalAddress("::ffff:192.0.2.9")).toBe("192.0.2.9");
    for (const bad of ["10.0.0.300", "127.1", "0x7f.0.0.1", "host.example", "", "1.2.3.4/8", "fe80::1%eth0"]) expect(canonicalAddress(bad), bad).toBeUndefined();
  });
});

describe("AddressPolicy", () => {
  const none = AddressPolicy.parse("");

  it("refuses unspecified, broadcast, multicast, loopback and link-local addresses, v4 and v6", () => {
    for (const [ip, what] of [
      ["0.0.0.0", "unspecified"],
      ["0.1.2.3", "unspecified"],
      ["::", "unspecified"],
      ["255.255.255.255", "broadcast"],
      ["224.0.0.1", "multicast"],
      ["ff02::1", "multicast"],
      ["127.0.0.1", "loopback"],
      ["127.8.9.10", "loopback"],
      ["::1", "loopback"],
      ["169.254.169.254", "link-local"],
      ["fe80::1", "link-local"],
    ]) {
      expect(none.refusal(ip!), ip).toMatch(new RegExp(`must not be (an?|the) .*${what}.*VNM_VTEP_ALLOWED_NETWORKS`));
    }
  });

  it("takes the addresses devices have: private, public, unique local", () => {
    for (const ip of ["10.1.2.3", "172.16.0.9", "192.168.1.1", "192.0.2.10", "8.8.8.8", "100.64.0.1", "fd00::5", "2001:db8::1"]) expect(none.refusal(ip), ip).toBeUndefined();
  });

  it("allows a refused range where an operator names its network", () => {
    const lab = AddressPolicy.parse(" 127.0.0.0/8, ::1/128 ,169.254.10.0/24");
    expect(lab.refusal("127.0.0.1")).toBeUndefined();
    expect(lab.refusal("::1")).toBeUndefined();
    expect(lab.refusal("169.254.10.7")).toBeUndefined();
    expect(lab.refusal("169.254.169.254")).toBeDefined();
    expect(lab.refusal("0.0.0.0")).toBeDefined();
  });

  it("names the entry that is not a network", () => {
    expect(() => AddressPolicy.parse("127.0.0.0/8,localhost")).toThrow(/"localhost" is not a network in CIDR form/);
    expect(() => AddressPolicy.parse("10.0.0.0/33")).toThrow(/10.0.0.0\/33/);
  });
});
