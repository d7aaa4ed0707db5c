// Security group rules (compat.SecurityGroupRule-v1): POST-only, validated as the networking
// API they mirror has it (rules.ts), normalised (ethertype and protocol lower case, the prefix in
// CIDR form), and the same rule of the same tenant in the same group refused (409): the same as
// the networking API judges it (rules.ts, sameRuleKey), checked under a lock on the group so
// parallel creates cannot both pass; a unique index backs the plain case.
import { ApiError, type Queryable, Resource, text, uuid } from "@vnm/kit";
import { z } from "zod";
import { normalisePrefix, parseProtocol, protocolFor, type RuleShape, ruleViolations, sameRuleKey } from "./rules.ts";

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
  .transform((r) => {
    const ethertype = r.ethertype ?? "ipv4";
    return { ...r, ethertype, protocol: protocolFor(r.protocol, ethertype) };
  });

type Input = z.output<typeof input>;

/** The rule as it will be stored, in the shape the sameness check reads. */
function shapeOf(r: Input): RuleShape {
  const prefix = r.remote_ip_prefix === undefined ? undefined : normalisePrefix(r.remote_ip_prefix)?.cidr;
  return {
    direction: r.direction,
    ethertype: r.ethertype,
    protocol: r.protocol ?? null,
    port_range_min: r.port_range_min ?? null,
    port_range_max: r.port_range_max ?? null,
    remote_ip_prefix: prefix ?? null,
    remote_group_id: r.remote_group_id ?? null,
  };
}

/** A 409 when the group already holds the same rule; the group stays locked until the transaction ends. */
async function refuseSameRule(q: Queryable, r: Input): Promise<void> {
  await q.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [`compat.security_group_rules:${r.tenant_id}:${r.security_group_id}`]);
  const { rows } = await q.query<RuleShape>(
    `SELECT direction, ethertype, protocol, port_range_min, port_range_max, remote_ip_prefix, remote_group_id::text
       FROM security_group_rules WHERE tenant_id = $1 AND security_group_id = $2 AND direction = $3 AND ethertype = $4`,
    [r.tenant_id, r.security_group_id, r.direction, r.ethertype],
  );
  const key = sameRuleKey(shapeOf(r));
  if (rows.some((row) => sameRuleKey(row) === key)) throw ApiError.conflict(SAME_RULE);
}

const SAME_RULE = "An identical rule already exists in this security group.";

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
  validate: async (q, r) => {
    const broken = ruleViolations(r);
    if (broken.length > 0) throw ApiError.invalid(broken);
    await refuseSameRule(q, r);
  },
  conflict: () => SAME_RULE,
});
