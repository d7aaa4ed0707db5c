// Security group rules (compat.SecurityGroupRule-v1): POST-only, validated as the networking
// API they mirror has it (each field's own rules in compat.proto; the protocol's JSON value and
// the rules of one field against another here and in rules.ts), normalised (ethertype and protocol lower case, the prefix in
// CIDR form), and the same rule of the same tenant in the same group refused (409): the same as
// the networking API judges it (rules.ts, sameRuleKey), checked under a lock on the group so
// parallel creates cannot both pass; a unique index backs the plain case.
import { ApiError, type Checked, type Queryable, Resource } from "@vnm/kit";
import { normalisePrefix, parseProtocol, protocolFor, type RuleInput, type RuleShape, ruleViolations, sameRuleKey } from "./rules.ts";

type Row = Record<string, unknown>;

/**
 * A rule's body (CompatSecurityGroupRule) as its field rules in compat.proto passed it: the
 * tenant, direction and group present, UUIDs, lengths, an ethertype of the three in any case.
 * The protocol is the JSON text the client sent (a name or a number).
 */
type RuleBody = Checked<"vnm.compat.v1.CompatSecurityGroupRule">;

/** A rule in its one spelling: ethertype in lower case (ipv4 when absent), the protocol by its name. */
type Rule = RuleBody & RuleInput;

/**
 * The rule a body states, as it will be stored; a 400 naming the protocol when its JSON value
 * is neither a protocol name nor a number from 0 to 255 (where Neutron answers 500).
 */
function ruleOf(body: RuleBody): Rule {
  const ethertype = (body.ethertype ?? "ipv4").toLowerCase();
  if (body.protocol === undefined) return { ...body, ethertype };
  const p = parseProtocol(body.protocol);
  if ("error" in p) throw ApiError.invalid([{ property: "protocol", message: p.error }]);
  return { ...body, ethertype, protocol: protocolFor(p.value, ethertype) };
}

/** The rule as it will be stored, in the shape the sameness check reads. */
function shapeOf(r: Rule): RuleShape {
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
async function refuseSameRule(q: Queryable, r: Rule): Promise<void> {
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
  columns: (body) => {
    const r = ruleOf(body);
    return {
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
    };
  },
  render: (r: Row) => ({
    ...Object.fromEntries(["id", "tenant_id", "direction", "security_group_id", "ethertype", "name", "port_range_min", "port_range_max", "remote_group_id", "remote_ip_prefix"].map((k) => [k, r[k] ?? null])),
    // A JSON value on the wire (the field takes a name or a number): written back as a string.
    protocol: r["protocol"] === null ? null : JSON.stringify(r["protocol"]),
  }),
  // Neutron's rules of one field against another (rules.ts, docs/security-group-rules.md), then
  // the same rule already in the group.
  validate: async (q, body) => {
    const r = ruleOf(body);
    const broken = ruleViolations(r);
    if (broken.length > 0) throw ApiError.invalid(broken);
    await refuseSameRule(q, r);
  },
  conflict: () => SAME_RULE,
});
