import { describe, expect, it } from "vitest";
import { loadCatalog } from "./catalog.ts";
import { changeReader } from "./changes.ts";

const read = changeReader(loadCatalog(), "vnm");
const B = "0d9f3c1e-6a0b-4f0e-9a51-1c1f4c9e2b7a";
const bridge = (event: string, extra: Record<string, unknown> = {}) => ({ domain: "bridge", kind: "Bridge", event, id: B, path: `/bridges/${B}`, tenantId: "t1", ...extra });

describe("changeReader", () => {
  it("passes a change on as its subject says, with its path one of its kind's", () => {
    expect(read("vnm.bridge.Bridge.deleted", bridge("deleted"))).toEqual({ kind: "bridge.Bridge", event: "deleted", id: B, path: `/bridges/${B}`, tenantId: "t1" });
    const subnet = { domain: "bridge", kind: "DhcpSubnet", event: "created", id: "10.0.0.0_24", path: `/bridges/${B}/dhcp/10.0.0.0_24`, tenantId: null };
    expect(read("vnm.bridge.DhcpSubnet.created", subnet)).toMatchObject({ kind: "bridge.DhcpSubnet", id: "10.0.0.0_24" });
    const entry = { domain: "bridge", kind: "MacPort", event: "created", id: `aa:bb:cc:dd:ee:ff_${B}`, path: `/bridges/${B}/mac_table/aa:bb:cc:dd:ee:ff_${B}`, tenantId: "t1" };
    expect(read("vnm.bridge.MacPort.created", entry)).toMatchObject({ kind: "bridge.MacPort" });
  });

  it("drops a body that says another domain, kind or event than its subject", () => {
    expect(read("vnm.tunnel.Vtep.deleted", bridge("deleted"))).toEqual({ drop: "body" });
    expect(read("vnm.bridge.Bridge.updated", bridge("deleted"))).toEqual({ drop: "body" });
    expect(read("vnm.bridge.Bridge.updated", bridge("updated\nid: 1\ndata: {}\n\nevent: deleted"))).toEqual({ drop: "body" });
    expect(read("vnm.bridge.Bridge.updated", null)).toEqual({ drop: "body" });
  });

  it("drops a subject that is not a known kind's change", () => {
    expect(read("vnm.bridge.Bridge", bridge("deleted"))).toEqual({ drop: "subject" });
    expect(read("other.bridge.Bridge.deleted", bridge("deleted"))).toEqual({ drop: "subject" });
    expect(read("vnm.bridge.Nothing.deleted", bridge("deleted"))).toEqual({ drop: "kind" });
    expect(read("vnm.bridge.Bridge.renamed", bridge("renamed"))).toEqual({ drop: "event" });
  });

  it("drops an id or path that is not an item of the subject's kind", () => {
    const wrong: [string, string][] = [
      ["x", "@evil.example/x"],
      ["x", "/bridges/x"],
      [B, `/vteps/${B}`],
      [B, `/bridges/${B}/../${B}`],
      ["..", `/bridges/${B}/dhcp/..`],
      ["a%2", `/bridges/${B}/dhcp/a%2`],
      ["a b", `/bridges/${B}/dhcp/a b`],
      [B, `/bridges/${B.slice(1)}`],
    ];
    for (const [id, path] of wrong) {
      const kind = path.includes("/dhcp/") ? "DhcpSubnet" : "Bridge";
      expect(read(`vnm.bridge.${kind}.updated`, { ...bridge("updated"), kind, id, path }), path).toEqual({ drop: "path" });
    }
    expect(read("vnm.bridge.Bridge.updated", bridge("updated", { tenantId: 7 }))).toEqual({ drop: "tenant" });
  });
});
