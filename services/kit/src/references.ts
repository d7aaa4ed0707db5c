// Which kind's item a field holds the id of (a bridge's inboundFilterId: a chain; a router's
// loadBalancerId: a load balancer; a port's inboundMirrorIds: mirrors), worked out from the
// proto alone: the console's pickers and links and the CLI's names in reference fields both read
// it from here, so the two never disagree about what a field names.
import type { Catalog, FieldInfo, KindInfo } from "./catalog.ts";
import { templateShape } from "./paths.ts";

/** A name's words, lower case: "nextHopPort" -> next, hop, port; "pool_id" -> pool, id. */
const wordsOf = (name: string) =>
  name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .toLowerCase()
    .split(/[\s_]+/)
    .filter(Boolean);
const endsWith = (a: string[], b: string[]) => b.length > 0 && a.length >= b.length && b.every((w, i) => a[a.length - b.length + i] === w);

/** A list's word for one of its items: "ports" -> port, "ids" -> id, "policies" -> policy. */
const singular = (w: string) => (w.endsWith("ies") ? `${w.slice(0, -3)}y` : w.endsWith("s") && !w.endsWith("ss") ? w.slice(0, -1) : w);

/**
 * Whether a repeated string field's items are ids: the proto says they are UUIDs, or its name
 * ends in "Ids" (vxlanPortIds). A list of names or addresses never names items.
 */
function holdsIds(f: FieldInfo): boolean {
  const items = (f.rules?.["repeated"] as { items?: { string?: { uuid?: boolean } } } | undefined)?.items;
  return f.uuid || items?.string?.uuid === true || wordsOf(f.name).at(-1) === "ids";
}

/**
 * The kind whose item a field holds the id of, given the kinds that may be named (top-level kinds:
 * one path variable, no parent) by their item path's shape.
 *
 * First the message's own word for it: a link field whose template is one kind's item path with
 * this field as its only variable (a port's `peer`, "/ports/{peerId}"; a router's `loadBalancer`).
 * Else the field's name: a string field whose words, less a trailing "id", end with a top-level
 * kind's name (nextHopPort, srvPortId: Port), or, within one domain, whose words end that kind's
 * name (compat's pool_id: CompatPool); only when exactly one kind fits. A repeated field holds
 * ids of one kind each, read the same way from its words in the singular (inboundMirrorIds:
 * Mirror; a rule's inPorts: Port), when its items are ids (holdsIds). Never a link, the item's
 * own id or its tenant.
 */
function referenceOf(k: KindInfo, f: FieldInfo, byShape: Map<string, KindInfo>, top: KindInfo[]): string | undefined {
  if (f.link !== undefined || f.name === "id" || f.name === k.resource.tenantField || f.type !== "string") return undefined;
  if (f.repeated && !holdsIds(f)) return undefined;
  if (!f.repeated) {
    for (const l of k.message.fields) {
      const m = l.link ? /^(?:\/[^{}/]+)+\/\{(\w+)\}$/.exec(l.link) : null;
      if (m?.[1] === f.name) {
        const target = byShape.get(templateShape(l.link!));
        if (target) return target.kind;
      }
    }
  }
  const words = wordsOf(f.name);
  if (f.repeated && words.length) words.push(singular(words.pop()!));
  if (words.at(-1) === "id") words.pop();
  const fits = top.filter((t) => endsWith(words, wordsOf(t.resource.name)) || (t.resource.domain === k.resource.domain && endsWith(wordsOf(t.resource.name), words)));
  const same = fits.filter((t) => t.resource.domain === k.resource.domain);
  const chosen = same.length > 0 ? same : fits;
  return chosen.length === 1 ? chosen[0]!.kind : undefined;
}

/** A kind's field to the kind whose items it names (by qualified kind, "policy.Chain"). */
export type References = (k: KindInfo, f: FieldInfo) => string | undefined;

/** What every field of the catalog's kinds names (referenceOf above), the kinds worked out once. */
export function references(c: Pick<Catalog, "kinds">): References {
  const kinds = [...c.kinds.values()];
  const top = kinds.filter((k) => !k.parent && (k.itemTemplate.match(/\{/g) ?? []).length === 1);
  const byShape = new Map(top.map((k) => [templateShape(k.itemTemplate), k]));
  return (k, f) => referenceOf(k, f, byShape, top);
}
