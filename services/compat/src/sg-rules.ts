// Security group rules (compat.SecurityGroupRule-v1): POST-only, validated as the networking
// API they mirror has it (rules.ts), normalised (ethertype and protocol lower case, the prefix in
// CIDR form), and an identical rule of the same tenant in the same group refused by a unique
// index (409).
import { ApiError, Resource, text, uuid } from "@vnm/kit";
import { z } from "zod";
import { normalisePrefix, parseProtocol, ruleViolations } from "./rules.ts";

type Row = Record<string, unknown>;
const ETHERTYPES = ["ipv4", "ipv6", "arp"] as const;

const input = z
  .object({
    id: uuid().optional(),
    tenant_id: text(255).refine((s) => s.length > 0, "must not be empty"),
    direction: z.enum(["ingress", "egress"], { error: "must be ingress or egress" }),
    security_group_id: uuid(),
    ethertype: z
      .string()
      .transform((e) => e.toLowerCase())
      .pipe(z.enum(ETHERTYPES, { error: "must be ipv4, ipv6 or arp" }))
      .optional(),
    name: text(255).optional(),
    port_range_min: z.number().int().optional(),
    port_range_max: z.number().int().optional(),
    protocol: z
      .string()
      .transform((json, ctx) => {
        const p = parseProtocol(json);
        if ("error" in p) ctx.addIssue({ code: "custom", message: p.error });
        return "value" in p ? p.value : json;
      })
      .optional(),
    remote_group_id: uuid().optional(),
    remote_ip_prefix: z.string().optional(),
  })
  .transform((r) => ({ ...r, ethertype: r.ethertype ?? "ipv4" }));

export const securityGroupRules = new Resource({
  proto: "vnm.compat.v1.CompatSecurityGroupRule",
  table: "security_group_rules",
  tenantColumn: "tenant_id",
  filters: { tenant_id: "tenant_id" },
  input,
  columns: (r) => ({
    tenant_id: r.tenant_id,
    direction: r.direction,
    security_group_id: r.security_group_id,
    ethertype: r.ethertype,
    name: r.name ?? null,
    port_range_min: r.port_range_min ?? null,
    port_range_max: r.port_range_max ?? null,
    protocol: r.protocol ?? null,
    remote_group_id: r.remote_group_id ?? null,
    remote_ip_prefix: r.remote_ip_prefix === undefined ? null : normalisePrefix(r.remote_ip_prefix)!.cidr,
  }),
  render: (r: Row) => ({
    ...Object.fromEntries(["id", "tenant_id", "direction", "security_group_id", "ethertype", "name", "port_range_min", "port_range_max", "remote_group_id", "remote_ip_prefix"].map((k) => [k, r[k] ?? null])),
    // A JSON value on the wire (the field takes a name or a number): written back as a string.
    protocol: r["protocol"] === null ? null : JSON.stringify(r["protocol"]),
  }),
  validate: (_q, r) => {
    const broken = ruleViolations(r);
    if (broken.length > 0) throw ApiError.invalid(broken);
  },
  conflict: () => "An identical rule already exists in this security group.",
});
