import { describe, expect, it } from "vitest";
import { bind, linkFields, parseTemplate, templateShape } from "./paths.ts";

describe("route templates", () => {
  it("split into literal and variable segments, one variable per segment", () => {
    expect(parseTemplate("/bridges/{bridgeId}/dhcp")).toEqual([{ literal: "bridges" }, { variable: "bridgeId" }, { literal: "dhcp" }]);
    expect(() => parseTemplate("bridges")).toThrow(/must start with/);
    expect(() => parseTemplate("/x/{a}_{b}")).toThrow(/unsupported path segment/);
  });

  it("compare by shape: a segment holding any placeholder is one variable", () => {
    expect(templateShape("/bridges/{id}/dhcp/{subnetAddr}")).toBe("/bridges/{}/dhcp/{}");
    expect(templateShape("/bridges/{bridgeId}/dhcp/{subnetPrefix}_{subnetLength}")).toBe("/bridges/{}/dhcp/{}");
  });

  it("bind a path's segments to variable names, or nothing when the path does not fit", () => {
    const t = parseTemplate("/bridges/{id}/ports");
    expect(bind(t, ["bridges", "b1", "ports"])).toEqual({ id: "b1" });
    expect(bind(t, ["bridges", "b1", "dhcp"])).toBeUndefined();
    expect(bind(t, ["bridges", "b1"])).toBeUndefined();
  });

  it("name the fields a link refers to, reserved expansions included", () => {
    expect(linkFields("/bridges/{bridgeId}/dhcp/{subnetPrefix}_{subnetLength}")).toEqual(["bridgeId", "subnetPrefix", "subnetLength"]);
    expect(linkFields("{+selfPath}")).toEqual(["selfPath"]);
  });
});
