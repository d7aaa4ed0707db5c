import { expect, it } from "vitest";
import { fieldLabel, inSentence, kindNames, phrase, plainWords } from "./words.ts";

it("names kinds as a person reads them, abbreviations spelled as networking does", () => {
  expect(kindNames("LoadBalancer")).toEqual({ singular: "Load balancer", plural: "Load balancers" });
  expect(kindNames("Vtep")).toEqual({ singular: "VTEP", plural: "VTEPs" });
  expect(kindNames("DhcpV6Subnet")).toEqual({ singular: "DHCPv6 subnet", plural: "DHCPv6 subnets" });
  expect(kindNames("QosPolicy")).toEqual({ singular: "QoS policy", plural: "QoS policies" });
  expect(kindNames("L2Insertion").plural).toBe("L2 insertions");
  expect(kindNames("VIP").plural).toBe("VIPs");
  expect(kindNames("TunnelZone").plural).toBe("Tunnel zones");
});

it("labels fields and collections", () => {
  expect(fieldLabel("adminStateUp")).toBe("Admin state up");
  expect(fieldLabel("tenant_id")).toBe("Tenant ID");
  expect(fieldLabel("interfaceMTU")).toBe("Interface MTU");
  expect(fieldLabel("managementIp")).toBe("Management IP");
  expect(fieldLabel("inboundMirrorIds")).toBe("Inbound mirror IDs");
  expect(phrase("vxlan_ports")).toBe("VXLAN ports");
  expect(phrase("vips")).toBe("VIPs");
});

it("keeps abbreviations when a name goes inside a sentence", () => {
  expect(inSentence("Bridge")).toBe("bridge");
  expect(inSentence("DHCP subnets")).toBe("DHCP subnets");
  expect(inSentence("QoS policy")).toBe("QoS policy");
});

it("puts the API's jargon in plain words", () => {
  expect(plainWords("may not be null")).toBe("is required");
  expect(plainWords("value must be a valid UUID")).toBe("must be an ID (a UUID)");
  expect(plainWords("value length must be at most 255 characters")).toBe("must be at most 255 characters");
  expect(plainWords("There is no Chain with ID x.")).toBe("There is no Chain with ID x.");
});
