// References between kinds: a field holding another item's id (a port's peerId, a route's
// nextHopPort, a binding's portId; the catalog says which kind, ConsoleField.ref) is a picker of
// the items of that kind the user can see in a form, and a link to that item on an item's page.
import { useEffect, useState } from "preact/hooks";
import { type Identity, call } from "./api.ts";
import { fillPath, itemName, KINDS, visibleTo } from "./kinds.ts";
import type { ConsoleField, ConsoleKind } from "./model.ts";
import { href } from "./route.ts";

// biome-ignore lint/suspicious/noExplicitAny: items of any kind
type Item = any;

/** The marker of the next page, from a Link header's rel="next". */
export function nextMarker(link: string | null): string | undefined {
  const m = link ? /<([^>]+)>\s*;\s*rel="?next"?/.exec(link) : null;
  return m ? (new URL(m[1]!, location.href).searchParams.get("marker") ?? undefined) : undefined;
}

/**
 * Up to `max` items of a list, page after page (1000 a page where the list pages, the API's
 * largest); `more` says the list holds more than were read.
 */
export async function listAll(kind: ConsoleKind, path: string, max: number, query: Record<string, string> = {}): Promise<{ items: Item[]; more: boolean }> {
  const paged = kind.listQuery.includes("limit");
  const items: Item[] = [];
  let marker: string | undefined;
  for (;;) {
    const q = new URLSearchParams(query);
    if (paged) q.set("limit", String(Math.min(1000, max - items.length + 1)));
    if (marker) q.set("marker", marker);
    const a = await call("GET", `${path}${q.size ? `?${q}` : ""}`);
    const page: Item[] = Array.isArray(a.body) ? a.body : [];
    items.push(...page);
    marker = paged ? nextMarker(a.headers.get("link")) : undefined;
    if (items.length > max) return { items: items.slice(0, max), more: true };
    if (!marker || page.length === 0) return { items, more: false };
  }
}

/** The most items a picker offers; beyond, it takes an id typed in, with the first ones suggested. */
export const PICKER_MAX = 500;

const segments = (p: string) => p.split("/").slice(1);

/** The kind whose item path `path` is (a literal segment each where the template has one), and the path. */
export function kindOfPath(path: string): ConsoleKind | undefined {
  const segs = segments(path);
  for (const k of KINDS.values()) {
    const t = segments(k.itemTemplate);
    if (t.length === segs.length && t.every((s, i) => /^\{\w+\}$/.test(s) || s === segs[i])) return k;
  }
  return undefined;
}

/** The path of the item of a top-level kind with this id. */
export function refPath(k: ConsoleKind, id: string): string {
  return k.itemTemplate.replace(/\{\w+\}/, encodeURIComponent(id));
}

/** A person's word for an item in a list of choices: its name, else its kind's first columns' values, with its id. */
export function choiceLabel(k: ConsoleKind, item: Item): string {
  const id = typeof item?.id === "string" ? item.id : "";
  const name = k.nameField ? item?.[k.nameField] : undefined;
  if (typeof name === "string" && name !== "") return `${name} (${id.slice(0, 8)})`;
  const words = k.columns
    .filter((c) => c !== "id" && typeof item?.[c] === "string" && item[c] !== "")
    .slice(0, 2)
    .map((c) => String(item[c]));
  return [...words, id].join(" · ");
}

/** The items of a kind a user may pick, read once per kind while the page is open. */
function useChoices(kind: ConsoleKind | undefined, who: Identity) {
  const [state, setState] = useState<{ items: Item[]; more: boolean; error?: unknown }>();
  useEffect(() => {
    if (!kind || !visibleTo(kind, who)) return;
    const target = fillPath(kind.listTemplates, undefined);
    if (!target.path) return;
    listAll(kind, target.path, PICKER_MAX).then(setState, (error) => setState({ items: [], more: false, error }));
  }, [kind?.kind]);
  return state;
}

/**
 * A picker of the items of `refKind` the user can see, for a field holding one's id: a list of
 * their names; with more than PICKER_MAX, an id typed in with the first ones suggested. A value
 * not among them (an item the user cannot list) stays offered as its id.
 */
export function RefPicker({ refKind, who, common, value, onValue }: { refKind: string; who: Identity; common: Record<string, unknown>; value: string; onValue: (v: string) => void }) {
  const k = KINDS.get(refKind);
  const choices = useChoices(k, who);
  if (!k || !choices || choices.error || choices.more) {
    const list = `${String(common["id"])}-choices`;
    return (
      <>
        <input {...common} type="text" autocomplete="off" list={choices ? list : undefined} placeholder={k ? `${k.singular} id` : undefined} value={value} onInput={(e) => onValue(e.currentTarget.value)} />
        {k && choices && (
          <datalist id={list}>
            {choices.items.map((i) => (
              <option key={i.id} value={i.id}>
                {choiceLabel(k, i)}
              </option>
            ))}
          </datalist>
        )}
      </>
    );
  }
  const known = choices.items.some((i) => i.id === value);
  return (
    <select {...common} value={value} onChange={(e) => onValue(e.currentTarget.value)}>
      <option value="">—</option>
      {value !== "" && !known && <option value={value}>{value}</option>}
      {choices.items.map((i) => (
        <option key={i.id} value={i.id}>
          {choiceLabel(k, i)}
        </option>
      ))}
    </select>
  );
}

/**
 * Where a field's value leads, when it is another item's id: the kind its `ref` names, or else
 * the item one of this item's links leads to, ending in that id (a port's deviceId: its
 * `device` link, a bridge's or a router's path).
 */
// biome-ignore lint/suspicious/noExplicitAny: an item of any kind
export function refTarget(kind: ConsoleKind, f: ConsoleField, item: any): { kind: ConsoleKind; path: string } | undefined {
  const v = item?.[f.name];
  if (typeof v !== "string" || v === "" || f.name === "id") return undefined;
  const k = f.ref ? KINDS.get(f.ref) : undefined;
  if (k) return { kind: k, path: refPath(k, v) };
  for (const l of kind.fields) {
    const url = l.link ? item?.[l.name] : undefined;
    if (typeof url !== "string" || l.name === "uri") continue;
    const path = new URL(url, location.href).pathname;
    const target = path.endsWith(`/${encodeURIComponent(v)}`) ? kindOfPath(path) : undefined;
    if (target) return { kind: target, path };
  }
  return undefined;
}

/** A link to an item another one names, named by its name once read; its id alone when the user cannot read it. */
export function RefLink({ target, id }: { target: { kind: ConsoleKind; path: string }; id: string }) {
  const { kind: k, path } = target;
  const [name, setName] = useState<string | undefined>();
  const [hidden, setHidden] = useState(false);
  useEffect(() => {
    setHidden(false);
    call("GET", path).then(
      (a) => setName(itemName(k, a.body, path)),
      () => setHidden(true),
    );
  }, [path]);
  if (hidden) return <>{id}</>;
  return (
    <a href={href({ page: "item", kind: k.kind, path })} data-ref={k.kind}>
      {name && name !== id ? `${name} (${id})` : id}
    </a>
  );
}
