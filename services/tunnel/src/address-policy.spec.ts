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

  it("takes the addresses devices have: private, public, unique local, documentation", () => {
    for (const ip of ["10.1.2.3", "172.16.0.9", "192.168.1.1", "192.0.2.10", "203.0.113.7", "8.8.8.8", "fd00::5", "2001:db8::1", "2a00:1450::1"]) expect(none.refusal(ip), ip).toBeUndefined();
  });

  it("refuses shared, special-purpose and cloud metadata addresses", () => {
    for (const [ip, what] of [
      ["fd00:ec2::254", "cloud's instance-services"],
      ["fd00:ec2::253", "cloud's instance-services"],
      ["100.100.100.200", "shared \\(carrier-grade NAT\\)"],
      ["100.64.0.1", "shared"],
      ["192.0.0.192", "reserved special-purpose"],
      ["192.0.0.170", "reserved special-purpose"],
      ["198.18.0.1", "reserved special-purpose"],
      ["240.0.0.1", "reserved special-purpose"],
      ["192.88.99.1", "reserved special-purpose"],
      ["192.175.48.1", "AS112"],
      ["2001:2::1", "benchmarking"],
      ["100::1", "discard-only"],
      ["fec0::1", "site-local"],
      ["5f00::1", "segment routing"],
      ["4000::1", "outside global unicast"],
    ]) {
      expect(none.refusal(ip!), ip).toMatch(new RegExp(`^must not be (an?|the) .*${what}.* unless its network is in VNM_VTEP_ALLOWED_NETWORKS$`));
    }
  });

  it("decodes the IPv4 address an IPv6 address carries and refuses it as the IPv4 address would be", () => {
    for (const [ip, v4, what] of [
      ["64:ff9b::a9fe:a9fe", "169.254.169.254", "link-local"], // NAT64, well-known prefix
      ["64:ff9b::7f00:1", "127.0.0.1", "loopback"],
      ["2002:a9fe:a9fe::1", "169.254.169.254", "link-local"], // 6to4
      ["2002:6464:64c8::1", "100.100.100.200", "shared"],
      ["::a9fe:a9fe", "169.254.169.254", "link-local"], // IPv4-compatible
      ["::127.0.0.1", "127.0.0.1", "loopback"],
      ["::ffff:0:a9fe:a9fe", "169.254.169.254", "link-local"], // IPv4-translated
      ["::ffff:a9fe:a9fe", "169.254.169.254", "link-local"], // IPv4-mapped, as given (stored as IPv4)
      ["2001:0:c000:c0:0:0:f5ff:fefe", "192.0.0.192", "reserved"], // Teredo: its server
      ["2001:0:808:808:0:0:80ff:fffe", "127.0.0.1", "loopback"], // Teredo: its client, inverted
    ]) {
      const expected = ip!.startsWith("::ffff:a9fe") ? "^must not be a link-local address" : `^must not be an address carrying ${v4!.replace(/\./g, "\\.")}, an? .*${what}.* unless its network is in VNM_VTEP_ALLOWED_NETWORKS$`;
      expect(none.refusal(ip!), ip).toMatch(new RegExp(expected));
    }
    // Forms that carry no usable device address are refused whatever they carry.
    expect(none.refusal("::ffff:0:808:808")).toMatch(/IPv4-translated/);
    expect(none.refusal("::8.8.8.8")).toMatch(/IPv4-compatible/);
    expect(none.refusal("64:ff9b:1::a9fe:a9fe")).toMatch(/local-use NAT64/);
    // A public IPv4 address behind NAT64, 6to4 or Teredo is a device's.
    for (const ip of ["64:ff9b::808:808", "2002:808:808::1", "2001:0:808:808:0:0:f7f7:f7f7"]) expect(none.refusal(ip), ip).toBeUndefined();
  });

  it("an allowed IPv4 network does not exempt the IPv6 forms that carry its addresses", () => {
    const lab = AddressPolicy.parse("127.0.0.0/8");
    expect(lab.refusal("127.0.0.1")).toBeUndefined();
    expect(lab.refusal("::ffff:127.0.0.1")).toBeUndefined(); // stored as 127.0.0.1: the same socket
    for (const ip of ["::127.0.0.1", "::ffff:0:7f00:1", "64:ff9b::7f00:1", "2002:7f00:1::1"]) expect(lab.refusal(ip), ip).toMatch(/carrying 127\.0\.0\.1, a loopback address/);
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
