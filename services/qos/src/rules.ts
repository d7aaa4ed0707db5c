// A QoS policy's rules: bandwidth limit (QOSRuleBWLimit-v1: maxKbps, maxBurstKb) and DSCP marking
// (QOSRuleDSCP-v1: dscpMark). Each is created under its policy's path and lives at its own
// (/qos_bw_limit_rules/{id}, /qos_dscp_rules/{id}); a PUT changes its values, never its policy.
// A rule is read with its policy's tenant (the views of migration 3), which it follows; it goes,
// announced, with its policy. The fields' limits are qos.proto's.
import { randomUUID } from "node:crypto";
import { ApiError, type CallContext, type Change, type Checked, type Handlers, isUuid, type MessageName, type Queryable, Resource, type Store } from "@vnm/kit";

type Emit = (c: Change) => void;

/** Set by the create handlers (service.ts) on the request: the policy of the path. */
export const POLICY_OF_PATH = "policyOfPath";

const policyColumn = (req: Record<string, unknown>) => (typeof req[POLICY_OF_PATH] === "string" ? { policy_id: req[POLICY_OF_PATH] } : {});

/**
 * A kind of rule: its create (POST under a policy, the catalog's create of the kind) runs under
 * the policy of its path, which must exist (404 before the body is judged) and stays until the
 * rule is written; the policy's tenancy was checked before (the rule follows it).
 */
class PolicyRules<P extends MessageName> extends Resource<P, Record<string, unknown>> {
  override handlers(store: Store): Handlers {
    const out = super.handlers(store);
    const rpc = this.info.rpcs.create;
    if (rpc) {
      out[rpc] = (req: Record<string, unknown>, ctx: CallContext) =>
        store.tx(ctx, async (q, emit) => {
          const id = req["id"];
          const found = isUuid(id) ? await q.query<{ id: string }>("SELECT id FROM qos_policies WHERE id = $1 FOR KEY SHARE", [id.toLowerCase()]) : undefined;
          const policy = found?.rows[0]?.id;
          if (!policy) throw ApiError.noItem("QosPolicy", id);
          return this.create(q, emit, { ...req, [POLICY_OF_PATH]: policy });
        });
    }
    return out;
  }
}

export const bwLimitRules = new PolicyRules({
  proto: "vnm.qos.v1.QosBwLimitRule",
  table: "qos_bw_limit_rules",
  view: "qos_bw_limit_rules_now",
  tenantColumn: "tenant_id",
  filters: { tenant_id: "tenant_id" },
  // A PUT replaces the values and keeps the policy.
  columns: (b, req) => ({ max_kbps: b.maxKbps ?? 0, max_burst_kb: b.maxBurstKb ?? null, ...policyColumn(req) }),
});

export const dscpRules = new PolicyRules({
  proto: "vnm.qos.v1.QosDscpRule",
  table: "qos_dscp_rules",
  view: "qos_dscp_rules_now",
  tenantColumn: "tenant_id",
  filters: { tenant_id: "tenant_id" },
  columns: (b, req) => ({ dscp_mark: b.dscpMark ?? 0, ...policyColumn(req) }),
});

const kinds = [
  { rules: bwLimitRules, table: "qos_bw_limit_rules", view: "qos_bw_limit_rules_now" },
  { rules: dscpRules, table: "qos_dscp_rules", view: "qos_dscp_rules_now" },
] as const;

/** Deletes a policy's rules (the policy locked by its delete), each announced. */
export async function dropRulesOf(q: Queryable, policyId: unknown, emit: Emit): Promise<void> {
  for (const { rules, table, view } of kinds) {
    await q.query(`SELECT id FROM ${table} WHERE policy_id = $1 ORDER BY id FOR UPDATE`, [policyId]);
    const gone = (await q.query(`SELECT * FROM ${view} WHERE policy_id = $1 ORDER BY seq`, [policyId])).rows;
    await q.query(`DELETE FROM ${table} WHERE policy_id = $1`, [policyId]);
    for (const r of gone) emit(rules.change("deleted", r));
  }
}

/** Announces a policy's rules as updated (their tenant is the policy's, which changed). */
export async function touchRulesOf(q: Queryable, policyId: unknown, emit: Emit): Promise<void> {
  for (const { rules, view } of kinds) {
    const rows = (await q.query(`SELECT * FROM ${view} WHERE policy_id = $1 ORDER BY seq`, [policyId])).rows;
    for (const r of rows) emit(rules.change("updated", r));
  }
}

type PolicyRule = Checked<"vnm.qos.v1.QosPolicyRule">;

/** A rule of a policy's `rules` as its kind's body (camelCase), and the kind it is of. */
function asRule(r: PolicyRule & { id: string }) {
  if (r.type === "bandwidth_limit") {
    const body = { id: r.id, maxKbps: r.max_kbps ?? 0, maxBurstKb: r.max_burst_kbps ?? null };
    return { at: kinds[0], body, values: [body.maxKbps, body.maxBurstKb], set: "max_kbps = $2, max_burst_kb = $3" };
  }
  const body = { id: r.id, dscpMark: r.dscp_mark ?? 0 };
  return { at: kinds[1], body, values: [body.dscpMark], set: "dscp_mark = $2" };
}

/**
 * A policy's `rules` (the original's form) made its rules, each change announced: on creation
 * every one is created; on a PUT, a rule of the policy's that is not given (with its kind) is
 * deleted, a given one that is the policy's has its values replaced, and the others are created
 * (a taken id is a 409).
 */
export async function setRulesOf(q: Queryable, policyId: string, given: PolicyRule[], emit: Emit, created: boolean): Promise<void> {
  const wanted = given.map((r) => asRule({ ...r, id: r.id ?? randomUUID() }));
  const existing = new Map<string, string>(); // id -> table
  if (!created) {
    for (const { rules, table, view } of kinds) {
      await q.query(`SELECT id FROM ${table} WHERE policy_id = $1 ORDER BY id FOR UPDATE`, [policyId]);
      const rows = (await q.query(`SELECT * FROM ${view} WHERE policy_id = $1 ORDER BY seq`, [policyId])).rows;
      for (const row of rows) {
        if (wanted.some((w) => w.at.table === table && w.body.id === row["id"])) existing.set(String(row["id"]), table);
        else {
          await q.query(`DELETE FROM ${table} WHERE id = $1`, [row["id"]]);
          emit(rules.change("deleted", row));
        }
      }
    }
  }
  for (const w of wanted) {
    const { rules, table, view } = w.at;
    if (existing.get(w.body.id) === table) {
      await q.query(`UPDATE ${table} SET ${w.set} WHERE id = $1`, [w.body.id, ...w.values]);
      const row = (await q.query(`SELECT * FROM ${view} WHERE id = $1`, [w.body.id])).rows[0];
      if (row) emit(rules.change("updated", row));
    } else {
      await rules.create(q, emit, { [rules.info.body ?? ""]: w.body, [POLICY_OF_PATH]: policyId });
    }
  }
}
