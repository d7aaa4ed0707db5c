import { describe, expect, it } from "vitest";
import { normalisePrefix, parseProtocol, ruleViolations } from "./rules.ts";

describe("protocol", () => {
  it("reads names in any case and numbers 0 to 255; known numbers read as their names", () => {
    expect(parseProtocol('"TCP"')).toEqual({ value: "tcp" });
    expect(parseProtocol('"IcmpV6"')).toEqual({ value: "icmpv6" });
    expect(parseProtocol("6")).toEqual({ value: "tcp" });
    expect(parseProtocol('"17"')).toEqual({ value: "udp" });
    expect(parseProtocol("132")).toEqual({ value: "132" });
    expect(parseProtocol("0")).toEqual({ value: "0" });
  });

  it("refuses what Neutron's validator chokes on, and anything else", () => {
    for (const bad of ['"06"', "6.5", "true", '["tcp"]', '"gre"', "256", "-1", '""', "{}", '"6 "']) expect(parseProtocol(bad)).toHaveProperty("error");
  });
});

describe("remote_ip_prefix", () => {
  it("is normalised to CIDR with its host bits cleared", () => {
    expect(normalisePrefix("10.0.0.5/24")).toEqual({ cidr: "10.0.0.0/24", family: "ipv4" });
    expect(normalisePrefix("10.0.0.5")).toEqual({ cidr: "10.0.0.5/32", family: "ipv4" });
    expect(normalisePrefix("192.168.7.255/0")).toEqual({ cidr: "0.0.0.0/0", family: "ipv4" });
    expect(normalisePrefix("2001:DB8:0:0:1::7/64")).toEqual({ cidr: "2001:db8::/64", family: "ipv6" });
    expect(normalisePrefix("2001:db8::ffff/127")).toEqual({ cidr: "2001:db8::fffe/127", family: "ipv6" });
    expect(normalisePrefix("::/0")).toEqual({ cidr: "::/0", family: "ipv6" });
    for (const bad of ["10.0.0.0/33", "10.0.0/8", "2001:db8::/129", "x/8", "10.0.0.0/8/8", "10.0.0.0/"]) expect(normalisePrefix(bad)).toBeUndefined();
  });
});

describe("rules across fields", () => {
  const v = (r: Parameters<typeof ruleViolations>[0]) => ruleViolations(r).map((x) => x.property);
  it("port ranges need a protocol; tcp/udp bounds in [1, 65535] with min <= max; icmp type and code in [0, 255]", () => {
    expect(v({ ethertype: "ipv4", port_range_min: 22, port_range_max: 22 })).toEqual(["port_range_min"]);
    expect(v({ ethertype: "ipv4", protocol: "tcp", port_range_min: 22, port_range_max: 22 })).toEqual([]);
    expect(v({ ethertype: "ipv4", protocol: "udp", port_range_min: 0, port_range_max: 10 })).toEqual(["port_range_min"]);
    expect(v({ ethertype: "ipv4", protocol: "tcp", port_range_min: 90, port_range_max: 80 })).toEqual(["port_range_min"]);
    expect(v({ ethertype: "ipv4", protocol: "tcp", port_range_min: 80 })).toEqual(["port_range_max"]);
    expect(v({ ethertype: "ipv4", protocol: "icmp", port_range_min: 8, port_range_max: 0 })).toEqual([]);
    expect(v({ ethertype: "ipv4", protocol: "icmp", port_range_max: 0 })).toEqual(["port_range_max"]);
    expect(v({ ethertype: "ipv4", protocol: "icmp", port_range_min: 256 })).toEqual(["port_range_min"]);
    expect(v({ ethertype: "ipv4", protocol: "132", port_range_min: 1, port_range_max: 2 })).toEqual(["port_range_min"]);
  });

  it("one remote at most, a prefix of the ethertype's family, icmpv6 on ipv6 only", () => {
    expect(v({ ethertype: "ipv4", remote_ip_prefix: "10.0.0.0/8", remote_group_id: "g" })).toEqual(["remote_group_id"]);
    expect(v({ ethertype: "ipv6", remote_ip_prefix: "10.0.0.0/8" })).toEqual(["remote_ip_prefix"]);
    expect(v({ ethertype: "arp", remote_ip_prefix: "10.0.0.0/8" })).toEqual(["remote_ip_prefix"]);
    expect(v({ ethertype: "ipv4", protocol: "icmpv6" })).toEqual(["protocol"]);
    expect(v({ ethertype: "ipv6", protocol: "icmpv6", remote_ip_prefix: "::/0" })).toEqual([]);
  });
});
