// The compat family's field rules live in compat.proto, once: what the catalog (and so the
// OpenAPI document, the console and the CLI) reads is what the service enforces.
import { loadCatalog } from "@vnm/kit";
import { expect, it } from "vitest";

const catalog = loadCatalog();
const field = (kind: string, name: string) => catalog.kindOf(`vnm.compat.v1.Compat${kind}`).message.byName.get(name)!;

it("states each field's allowed values as buf.validate's string.in, which the catalog reads as the field's values", () => {
  expect(field("Pool", "lb_method")).toMatchObject({ values: ["ROUND_ROBIN"], rules: { string: { in: ["ROUND_ROBIN"] } } });
  expect(field("Vip", "status")).toMatchObject({ values: ["ACTIVE", "INACTIVE"], rules: { string: { in: ["ACTIVE", "INACTIVE"] } } });
  expect(field("HealthMonitor", "type")).toMatchObject({ values: ["PING", "TCP", "HTTP", "HTTPS"] });
  expect(field("SecurityGroupRule", "direction")).toMatchObject({ values: ["ingress", "egress"], rules: { required: true } });
});

it("states the ranges, lengths and formats the service checks", () => {
  expect(field("Member", "weight").rules).toEqual({ int32: { gte: 0, lte: 256 } });
  expect(field("Member", "address").rules).toEqual({ string: { ipv4: true } });
  expect(field("Vip", "connection_limit").rules).toEqual({ int64: { gte: "-1", lte: "2147483647" } });
  expect(field("HealthMonitor", "pools").rules).toEqual({ repeated: { max_items: "256" } });
  expect(field("Pool", "tenant_id").rules).toEqual({ required: true, string: { min_len: "1", max_len: "255", "[vnm.api.text]": true } });
  expect(field("SecurityGroupRule", "security_group_id")).toMatchObject({ uuid: true, rules: { required: true, string: { uuid: true } } });
});

it("leaves a rule's protocol a JSON value: a name or a number, read by the service, with no string rule of its own", () => {
  expect(field("SecurityGroupRule", "protocol")).toMatchObject({ jsonValue: true });
  expect(field("SecurityGroupRule", "protocol").rules).toBeUndefined();
});
