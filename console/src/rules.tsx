// A chain's rules (issue 52): an ordered table in position order, each rule's action and its
// condition in words a person reads ("TCP from 10.0.0.0/24 to ports 22-80, not in port group
// web") rather than its fields, and buttons moving a rule up or down. Rules have no PUT (the
// API answers 405), so a move is a delete and a create of the same rule at its new position
// (its id kept where the API takes it back): the table says so, and when the create fails the
// rule is put back where it was.
import { type ComponentChildren, Fragment } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { ApiError, type Identity, call } from "./api.ts";
import { onChange } from "./events.ts";
import { canWrite, KINDS } from "./kinds.ts";
import type { ConsoleKind } from "./model.ts";
import { RefLink, refPath } from "./refs.tsx";
import { href } from "./route.ts";
import { ErrorNote, toast } from "./ui.tsx";

/** The kind whose collection under a chain is shown this way. */
export const RULE_KIND = "policy.Rule";

// biome-ignore lint/suspicious/noExplicitAny: a rule as the API answers it
type Rule = any;

const PROTOCOLS: Record<number, string> = { 1: "ICMP", 6: "TCP", 17: "UDP", 47: "GRE", 58: "ICMPv6", 132: "SCTP" };
const ETHERTYPES: Record<number, string> = { 2048: "IPv4", 2054: "ARP", 34525: "IPv6", 33024: "VLAN-tagged" };

const set = (v: unknown) => v !== null && v !== undefined && v !== "" && !(Array.isArray(v) && v.length === 0);
const not = (inv: unknown) => (inv === true ? "not " : "");

/** A link to the item of `kind` with this id, named by its name. */
function Named({ kind, id }: { kind: string; id: string }) {
  const k = KINDS.get(kind);
  return k ? <RefLink target={{ kind: k, path: refPath(k, id) }} id={id} short /> : <span>{id}</span>;
}

function range(r: Rule): string {
  if (!r || typeof r !== "object") return String(r);
  return r.start === r.end || r.end === undefined ? `port ${r.start}` : `ports ${r.start}-${r.end}`;
}

const cidr = (addr: string, len: unknown) => (typeof len === "number" && len > 0 && len < 32 ? `${addr}/${len}` : len === 0 ? `${addr}/0` : addr);

/** A rule's condition as phrases: what traffic, from where, to where, through which ports. */
export function conditionWords(r: Rule): ComponentChildren[] {
  const out: ComponentChildren[] = [];
  if (set(r.dlType)) out.push(`${not(r.invDlType)}${ETHERTYPES[r.dlType] ?? `ethertype 0x${Number(r.dlType).toString(16)}`}`);
  if (set(r.nwProto)) out.push(`${not(r.invNwProto)}${PROTOCOLS[r.nwProto] ?? `IP protocol ${r.nwProto}`}`);
  if (set(r.nwSrcAddress)) out.push(`${not(r.invNwSrc)}from ${cidr(r.nwSrcAddress, r.nwSrcLength)}`);
  if (set(r.ipAddrGroupSrc))
    out.push(
      <>
        {not(r.invIpAddrGroupSrc)}from the addresses of <Named kind="routing.IpAddrGroup" id={r.ipAddrGroupSrc} />
      </>,
    );
  if (set(r.tpSrc)) out.push(`${not(r.invTpSrc)}from ${range(r.tpSrc)}`);
  if (set(r.nwDstAddress)) out.push(`${not(r.invNwDst)}to ${cidr(r.nwDstAddress, r.nwDstLength)}`);
  if (set(r.ipAddrGroupDst))
    out.push(
      <>
        {not(r.invIpAddrGroupDst)}to the addresses of <Named kind="routing.IpAddrGroup" id={r.ipAddrGroupDst} />
      </>,
    );
  if (set(r.tpDst)) out.push(`${not(r.invTpDst)}to ${range(r.tpDst)}`);
  if (set(r.nwTos)) out.push(`${not(r.invNwTos)}with ToS ${r.nwTos}`);
  if (set(r.dlSrc)) out.push(`${not(r.invDlSrc)}from MAC ${r.dlSrc}${set(r.dlSrcMask) ? ` (mask ${r.dlSrcMask})` : ""}`);
  if (set(r.dlDst)) out.push(`${not(r.invDlDst)}to MAC ${r.dlDst}${set(r.dlDstMask) ? ` (mask ${r.dlDstMask})` : ""}`);
  const ports = (ids: string[]) => ids.map((id, i) => <Fragment key={id}>{i > 0 ? ", " : ""}<Named kind="routing.Port" id={id} /></Fragment>);
  if (set(r.inPorts)) out.push(<>{not(r.invInPorts)}entering at {ports(r.inPorts)}</>);
  if (set(r.outPorts)) out.push(<>{not(r.invOutPorts)}leaving at {ports(r.outPorts)}</>);
  for (const [field, inv, words] of [
    ["portGroup", "invPortGroup", "in port group"],
    ["inPortGroup", "invInPortGroup", "entering from port group"],
    ["outPortGroup", "invOutPortGroup", "leaving to port group"],
  ] as const)
    if (set(r[field]))
      out.push(
        <>
          {not(r[inv])}
          {words} <Named kind="routing.PortGroup" id={r[field]} />
        </>,
      );
  if (set(r.traversedDevice)) out.push(`${not(r.invTraversedDevice)}having passed device ${r.traversedDevice}`);
  if (r.noVlan === true) out.push("without a VLAN tag");
  else if (set(r.vlan)) out.push(`on VLAN ${r.vlan}`);
  if (set(r.icmpDataSrcIpAddress)) out.push(`${not(r.invIcmpDataSrcIp)}ICMP data from ${cidr(r.icmpDataSrcIpAddress, r.icmpDataSrcIpLength)}`);
  if (set(r.icmpDataDstIpAddress)) out.push(`${not(r.invIcmpDataDstIp)}ICMP data to ${cidr(r.icmpDataDstIpAddress, r.icmpDataDstIpLength)}`);
  if (r.matchForwardFlow === true) out.push("forward flows only");
  if (r.matchReturnFlow === true) out.push("return flows only");
  if (r.matchNwDstRewritten === true) out.push("destination rewritten");
  const defaultFragments = set(r.tpSrc) || set(r.tpDst) ? "header" : "any";
  if (set(r.fragmentPolicy) && r.fragmentPolicy !== defaultFragments && !["dnat", "snat"].includes(r.type)) out.push(`fragments: ${r.fragmentPolicy}`);
  return out;
}

/** The condition as one sentence-like line ("TCP from 10.0.0.0/24 to ports 22-80"), "any traffic" when it has none. */
export function Condition({ rule }: { rule: Rule }) {
  const parts = conditionWords(rule);
  const line = parts.length === 0 ? "any traffic" : parts.map((p, i) => <Fragment key={i}>{i > 0 ? " " : ""}{p}</Fragment>);
  return rule.condInvert === true ? <>anything but ({line})</> : <span>{line}</span>;
}

const FLOW: Record<string, string> = { accept: "accept", continue: "continue", return: "return", redirect: "redirect" };

/** What a rule does, in words. */
export function Action({ rule: r }: { rule: Rule }) {
  const then = set(r.flowAction) ? `, then ${FLOW[r.flowAction] ?? r.flowAction}` : "";
  const targets = Array.isArray(r.natTargets)
    ? r.natTargets
        .map((t: Rule) => `${t.addressFrom === t.addressTo ? t.addressFrom : `${t.addressFrom}-${t.addressTo}`}${t.portFrom || t.portTo ? `:${t.portFrom === t.portTo ? t.portFrom : `${t.portFrom}-${t.portTo}`}` : ""}`)
        .join(", ")
    : "";
  switch (r.type) {
    case "accept":
      return <>Accept</>;
    case "drop":
      return <>Drop</>;
    case "reject":
      return <>Reject</>;
    case "return":
      return <>Return to the calling chain</>;
    case "jump":
      return (
        <>
          Jump to chain {set(r.jumpChainId) ? <Named kind="policy.Chain" id={r.jumpChainId} /> : (r.jumpChainName ?? "?")}
        </>
      );
    case "dnat":
      return <>Destination NAT to {targets}{then}</>;
    case "snat":
      return <>Source NAT to {targets}{then}</>;
    case "rev_dnat":
      return <>Reverse destination NAT{then}</>;
    case "rev_snat":
      return <>Reverse source NAT{then}</>;
    case "l2_transform": {
      const what = [r.popVlan === true ? "pop the VLAN tag" : "", set(r.pushVlan) && r.pushVlan !== 0 ? `push VLAN ${r.pushVlan}` : ""].filter(Boolean).join(", ");
      return (
        <>
          L2 transform{what ? ` (${what})` : ""}
          {set(r.targetPortId) && (
            <>
              {" "}
              to <Named kind="routing.Port" id={r.targetPortId} />
            </>
          )}
          {then}
        </>
      );
    }
    case "trace":
      return <>Trace (request {String(r.requestId ?? "")})</>;
    default:
      return <>{String(r.type)}</>;
  }
}

/** A rule's page: what it does in one sentence, above its fields. */
export function RuleSummary({ rule }: { rule: Rule }) {
  return (
    <p class="rule-summary">
      Position {String(rule.position)}: <Action rule={rule} /> for <Condition rule={rule} />.
    </p>
  );
}

/** A rule's body for a create: what it holds that a create takes (not its computed or read-only fields). */
function bodyOf(kind: ConsoleKind, r: Rule, position: number, withId: boolean): Record<string, unknown> {
  const writable = new Set(kind.fields.filter((f) => !f.readOnly).map((f) => f.name));
  const body: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(r)) if (writable.has(k) && v !== null && v !== undefined && (k !== "id" || withId)) body[k] = v;
  body["position"] = position;
  return body;
}

/**
 * Moves a rule: deletes it and creates it again at `to` (with its id, else with a new one when
 * the API keeps the old id taken). When the create fails, the rule is created again where it was.
 */
async function moveRule(kind: ConsoleKind, chainPath: string, r: Rule, to: number): Promise<void> {
  const rulePath = new URL(String(r.uri ?? refPath(kind, r.id)), location.href).pathname;
  await call("DELETE", rulePath);
  const create = async (position: number) => {
    try {
      await call("POST", `${chainPath}/rules`, bodyOf(kind, r, position, true));
    } catch (err) {
      if (!(err instanceof ApiError) || err.status !== 409) throw err;
      await call("POST", `${chainPath}/rules`, bodyOf(kind, r, position, false));
    }
  };
  try {
    await create(to);
  } catch (err) {
    await create(r.position).catch(() => {});
    throw err;
  }
}

/** The chain's rules in position order, with their action and condition in words, each movable. */
export function RulesTable({ chainPath, title, who }: { chainPath: string; title: string; who: Identity }) {
  const kind = KINDS.get(RULE_KIND)!;
  const [rules, setRules] = useState<Rule[] | undefined>();
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const load = useCallback(async () => {
    try {
      const a = await call("GET", `${chainPath}/rules`);
      const list: Rule[] = Array.isArray(a.body) ? a.body : [];
      setRules([...list].sort((x, y) => Number(x.position) - Number(y.position)));
    } catch (err) {
      setError(err);
    }
  }, [chainPath]);
  useEffect(() => {
    void load();
  }, [load]);
  const timer = useRef<ReturnType<typeof setTimeout>>(undefined);
  useEffect(
    () =>
      onChange((c) => {
        if (c.kind !== kind.eventName && c.event !== "resync") return;
        clearTimeout(timer.current);
        timer.current = setTimeout(() => void load(), 150);
      }),
    [load],
  );
  const writes = canWrite(who);
  const move = async (r: Rule, to: number) => {
    setBusy(true);
    setError(undefined);
    try {
      await moveRule(kind, chainPath, r, to);
      toast(`Rule moved from position ${r.position} to ${to}.`);
    } catch (err) {
      setError(err);
    }
    await load();
    setBusy(false);
  };
  const remove = async (r: Rule) => {
    setBusy(true);
    setError(undefined);
    try {
      await call("DELETE", new URL(String(r.uri), location.href).pathname);
      toast(`Rule ${r.position} deleted.`);
    } catch (err) {
      setError(err);
    }
    await load();
    setBusy(false);
  };
  const n = rules?.length ?? 0;
  return (
    <div class="list rules">
      <div class="list-head">
        <h2 id="chain-rules">{title}</h2>
        {writes && (
          <a class="button" href={href({ page: "new", kind: kind.kind, parent: chainPath })}>
            New rule
          </a>
        )}
      </div>
      <p class="help">
        Rules apply in this order, first match wins. Rules cannot be changed in place: moving one deletes it and creates it again at its new place.
      </p>
      <ErrorNote error={error} />
      {rules && rules.length === 0 && <p>No rules: this chain lets all traffic through.</p>}
      {rules && rules.length > 0 && (
        <section class="table-wrap" tabindex={0} aria-labelledby="chain-rules">
          <table>
            <thead>
              <tr>
                <th scope="col">Position</th>
                <th scope="col">Matches</th>
                <th scope="col">Action</th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {rules.map((r) => (
                <tr key={r.id}>
                  <td data-label="Position">
                    <a href={href({ page: "item", kind: kind.kind, path: new URL(String(r.uri), location.href).pathname })} aria-label={`Rule ${r.position}`}>
                      {r.position}
                    </a>
                  </td>
                  <td data-label="Matches" class="condition">
                    <Condition rule={r} />
                  </td>
                  <td data-label="Action">
                    <Action rule={r} />
                  </td>
                  <td class="row-actions">
                    {writes && (
                      <>
                        <button type="button" class="link" disabled={busy || r.position <= 1} aria-label={`Move rule ${r.position} up`} onClick={() => void move(r, r.position - 1)}>
                          Up
                        </button>
                        <button type="button" class="link" disabled={busy || r.position >= n} aria-label={`Move rule ${r.position} down`} onClick={() => void move(r, r.position + 1)}>
                          Down
                        </button>
                        <button type="button" class="link danger" disabled={busy} aria-label={`Delete rule ${r.position}`} onClick={() => void remove(r)}>
                          Delete
                        </button>
                      </>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      )}
    </div>
  );
}
