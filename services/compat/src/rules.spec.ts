import { describe, expect, it } from "vitest";
import { normalisePrefix, parseProtocol, protocolFor, type RuleShape, ruleViolations, sameRuleKey } from "./rules.ts";

describe("protocol", () => {
  it("reads names in any case and numbers 0 to 255; known numbers read as their names", () => {
    expect(parseProtocol('"TCP"')).toEqual({ value: "tcp" });
    expect(parseProtocol('"IcmpV6"')).toEqual({ value: "icmpv6" });
    expect(parseProtocol("6")).toEqual({ value: "tcp" });
    expect(parseProtocol('"17"')).toEqual({ value: "udp" });
    expect(parseProtocol("133")).toEqual({ value: "133" });
    expect(parseProtocol("0")).toEqual({ value: "0" });
  });

  it("knows the networking API's other names and numbers: sctp, gre, esp, vrrp, udplite, dccp, ipv6-icmp, ...", () => {
    expect(parseProtocol('"SCTP"')).toEqual({ value: "sctp" });
    expect(parseProtocol('"gre"')).toEqual({ value: "gre" });
    expect(parseProtocol("132")).toEqual({ value: "sctp" });
    expect(parseProtocol("50")).toEqual({ value: "esp" });
    expect(parseProtocol('"112"')).toEqual({ value: "vrrp" });
    expect(parseProtocol('"ipv6-icmp"')).toEqual({ value: "icmpv6" });
    expect(parseProtocol("58")).toEqual({ value: "icmpv6" });
    expect(parseProtocol("200")).toEqual({ value: "200" });
  });

  it("ICMP on IPv6 is ICMPv6, as the networking API stores it", () => {
    expect(protocolFor("icmp", "ipv6")).toBe("icmpv6");
    expect(protocolFor("icmp", "ipv4")).toBe("icmp");
    expect(protocolFor(undefined, "ipv6")).toBeUndefined();
  });

  it("refuses what Neutron's validator chokes on, and anything else", () => {
    for (const bad of ['"06"', "6.5", "true", '["tcp"]', '"gopher"', "256", "-1", '""', "{}", '"6 "']) expect(parseProtocol(bad)).toHaveProperty("error");
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
    for (const bad of ["10.0.0.0/33", "10.0.0", "2001:db8::/129", "x/8", "10.0.0.0/8/8", "10.0.0.0/", "10.0.0.0/255.0.255.0", "2001:db8::/ffff::"]) {
      expect(normalisePrefix(bad), bad).toBeUndefined();
    }
  });

  it("reads the forms the networking API reads: a short IPv4 address before a length, a netmask, a host mask", () => {
    expect(normalisePrefix("10/8")).toEqual({ cidr: "10.0.0.0/8", family: "ipv4" });
    expect(normalisePrefix("192.168/16")).toEqual({ cidr: "192.168.0.0/16", family: "ipv4" });
    expect(normalisePrefix("10.0.0/24")).toEqual({ cidr: "10.0.0.0/24", family: "ipv4" });
    expect(normalisePrefix("10.1.2.3/255.255.0.0")).toEqual({ cidr: "10.1.0.0/16", family: "ipv4" });
    expect(normalisePrefix("10.1.2.3/0.0.255.255")).toEqual({ cidr: "10.1.0.0/16", family: "ipv4" });
    expect(normalisePrefix("10.1.2.3/255.255.255.255")).toEqual({ cidr: "10.1.2.3/32", family: "ipv4" });
    expect(normalisePrefix("10.1.2.3/0.0.0.0")).toEqual({ cidr: "0.0.0.0/0", family: "ipv4" });
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
    expect(v({ ethertype: "ipv4", protocol: "gre", port_range_min: 1, port_range_max: 2 })).toEqual(["port_range_min"]);
    expect(v({ ethertype: "ipv4", protocol: "200", port_range_min: 1, port_range_max: 2 })).toEqual(["port_range_min"]);
  });

  it("sctp, dccp and udplite have ports as tcp and udp do", () => {
    for (const protocol of ["sctp", "dccp", "udplite"]) {
      expect(v({ ethertype: "ipv4", protocol, port_range_min: 5000, port_range_max: 5001 }), protocol).toEqual([]);
      expect(v({ ethertype: "ipv4", protocol, port_range_min: 0, port_range_max: 5 }), protocol).toEqual(["port_range_min"]);
      expect(v({ ethertype: "ipv4", protocol, port_range_min: 5 }), protocol).toEqual(["port_range_max"]);
    }
  });

  it("one remote at most, a prefix of the ethertype's family, icmpv6 on ipv6 only", () => {
    expect(v({ ethertype: "ipv4", remote_ip_prefix: "10.0.0.0/8", remote_group_id: "g" })).toEqual(["remote_group_id"]);
    expect(v({ ethertype: "ipv6", remote_ip_prefix: "10.0.0.0/8" })).toEqual(["remote_ip_prefix"]);
    expect(v({ ethertype: "arp", remote_ip_prefix: "10.0.0.0/8" })).toEqual(["remote_ip_prefix"]);
    expect(v({ ethertype: "ipv4", protocol: "icmpv6" })).toEqual(["protocol"]);
    expect(v({ ethertype: "ipv4", protocol: "ipv6-frag" })).toEqual(["protocol"]);
    expect(v({ ethertype: "ipv6", protocol: "ipv6-route" })).toEqual([]);
    expect(v({ ethertype: "ipv6", protocol: "icmpv6", remote_ip_prefix: "::/0" })).toEqual([]);
  });
});

describe("the same rule", () => {
  const rule = (r: Partial<RuleShape>): RuleShape => ({
    direction: "ingress",
    ethertype: "ipv4",
    protocol: null,
    port_range_min: null,
    port_range_max: null,
    remote_ip_prefix: null,
    remote_group_id: null,
    ...r,
  });
  const same = (a: Partial<RuleShape>, b: Partial<RuleShape>) => sameRuleKey(rule(a)) === sameRuleKey(rule(b));

  it("no range is a ported protocol's full range; no prefix is the whole address space", () => {
    expect(same({ protocol: "tcp" }, { protocol: "tcp", port_range_min: 1, port_range_max: 65535 })).toBe(true);
    expect(same({ protocol: "sctp" }, { protocol: "sctp", port_range_min: 1, port_range_max: 65535 })).toBe(true);
    expect(same({}, { remote_ip_prefix: "0.0.0.0/0" })).toBe(true);
    expect(same({ ethertype: "ipv6" }, { ethertype: "ipv6", remote_ip_prefix: "::/0" })).toBe(true);
  });

  it("a protocol is judged by its number, whichever way it was stored", () => {
    expect(same({ protocol: "sctp" }, { protocol: "132" })).toBe(true);
    expect(same({ protocol: "tcp" }, { protocol: "6" })).toBe(true);
  });

  it("anything else that differs makes another rule", () => {
    expect(same({ protocol: "tcp" }, { protocol: "tcp", port_range_min: 1, port_range_max: 65534 })).toBe(false);
    expect(same({ protocol: "icmp", port_range_min: 1, port_range_max: 65535 }, { protocol: "icmp" })).toBe(false);
    expect(same({ remote_ip_prefix: "10.0.0.0/8" }, {})).toBe(false);
    expect(same({ direction: "egress" }, {})).toBe(false);
    expect(same({ protocol: "udp" }, { protocol: "tcp" })).toBe(false);
  });
});
