// References between kinds: a field holding another item's id (a port's peerId, a route's
// nextHopPort, a binding's portId; the catalog says which kind, ConsoleField.ref) is a picker of
// the items of that kind the user can see in a form, and a link to that item on an item's page.
import { useEffect, useState } from "preact/hooks";
import { type Identity, call } from "./api.ts";
import { fillPath, itemName, KINDS, visibleTo } from "./kinds.ts";
import type { ConsoleField, ConsoleKind } from "./model.ts";
import { href } from "./route.ts";
import { inSentence } from "./words.ts";

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

/** A person's word for an item in a list of choices: its name, else its kind's first columns' values. */
export function choiceLabel(k: ConsoleKind, item: Item): string {
  const id = typeof item?.id === "string" ? item.id : "";
  const name = k.nameField ? item?.[k.nameField] : undefined;
  if (typeof name === "string" && name !== "") return name;
  const words = k.columns
    .filter((c) => c !== "id" && typeof item?.[c] === "string" && item[c] !== "")
    .slice(0, 2)
    .map((c) => String(item[c]));
  return words.length > 0 ? words.join(" · ") : id;
}

/** How many items a picker shows before anything is typed, and searches among by part of a name. */
export const PICKER_FIRST = 500;

/** The first items of a kind, read once per 30 s for every picker and keystroke. */
const firsts = new Map<string, { at: number; items: Promise<Item[]> }>();
function firstItems(k: ConsoleKind, path: string): Promise<Item[]> {
  const hit = firsts.get(path);
  if (hit && Date.now() - hit.at < 30_000) return hit.items;
  const items = listAll(k, path, PICKER_FIRST).then((r) => r.items);
  firsts.set(path, { at: Date.now(), items });
  items.catch(() => firsts.delete(path));
  return items;
}
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Names of items read for links and pickers, by path, for a minute: a table of twenty rows
 * naming the same router reads it once.
 */
const names = new Map<string, { at: number; name: Promise<string | undefined> }>();
export function nameOf(k: ConsoleKind, path: string): Promise<string | undefined> {
  const hit = names.get(path);
  if (hit && Date.now() - hit.at < 60_000) return hit.name;
  const name = call("GET", path).then(
    (a) => itemName(k, a.body, path),
    () => undefined,
  );
  names.set(path, { at: Date.now(), name });
  return name;
}

/**
 * The items of `k` a search finds: with nothing typed, the first ones; else, asked of the API at
 * once, the items whose name is the text (`?name=`, on every page) and the item whose id it is,
 * then those of the first PICKER_FIRST (read once for 30 s) whose name or id holds it.
 */
async function search(k: ConsoleKind, text: string): Promise<Item[]> {
  const target = fillPath(k.listTemplates, undefined);
  if (!target.path) return [];
  const t = text.trim();
  const first = firstItems(k, target.path);
  if (t === "") return first;
  const exact = k.nameField && k.filters.includes(k.nameField) ? listAll(k, target.path, 20, { [k.nameField]: t }).then((r) => r.items, () => []) : Promise.resolve([]);
  const byId = UUID.test(t) ? call("GET", refPath(k, t)).then((a) => [a.body], () => []) : Promise.resolve([]);
  const lower = t.toLowerCase();
  const some = (await first).filter((i) => choiceLabel(k, i).toLowerCase().includes(lower) || String(i?.id ?? "").startsWith(lower));
  const seen = new Set<string>();
  return [...(await exact), ...(await byId), ...some].filter((i) => {
    const id = String(i?.id ?? "");
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}

/**
 * A picker of the items of `refKind` the user can see, for a field holding one's id: a text box
 * showing the chosen item's name; typing searches the API as it goes (a name on any page, an id,
 * part of the name among the first items) and offers the items found by name. Text that is
 * not chosen from the list goes as typed, so the API names a mistake on the field.
 */
export function RefPicker({ refKind, who, common, value, onValue }: { refKind: string; who: Identity; common: Record<string, unknown>; value: string; onValue: (v: string) => void }) {
  const k = KINDS.get(refKind);
  const list = `${String(common["id"])}-options`;
  const p = usePicker(k, who, value, onValue);
  const shown = p.options ?? [];
  const onKeyDown = (e: KeyboardEvent) => {
    if (e.key === "ArrowDown") {
      e.preventDefault();
      p.setOpen(true);
      p.setActive(Math.min(shown.length - 1, p.active + 1));
    } else if (e.key === "ArrowUp") {
      e.preventDefault();
      p.setActive(Math.max(0, p.active - 1));
    } else if (e.key === "Enter" && p.open && p.active >= 0 && shown[p.active]) {
      e.preventDefault();
      p.pick(shown[p.active]);
    } else if (e.key === "Escape") p.setOpen(false);
  };
  return (
    <div class="picker">
      <input
        {...common}
        type="text"
        role="combobox"
        autocomplete="off"
        aria-autocomplete="list"
        aria-expanded={p.open && shown.length > 0}
        aria-controls={list}
        aria-activedescendant={p.open && p.active >= 0 ? `${list}-${p.active}` : undefined}
        placeholder={k ? `Type a ${inSentence(k.singular)}'s name or ID` : undefined}
        value={p.text}
        onFocus={() => p.setOpen(true)}
        onBlur={() => setTimeout(() => p.setOpen(false), 150)}
        onInput={(e) => p.type(e.currentTarget.value)}
        onKeyDown={onKeyDown}
      />
      {k && p.chosen && value === p.chosen && (
        <span class="help picker-id">
          <a href={href({ page: "item", kind: k.kind, path: refPath(k, p.chosen) })}>{p.chosen}</a>
        </span>
      )}
      <div id={list} role="listbox" tabindex={-1} class="picker-options" hidden={!p.open || shown.length === 0} aria-label={k ? k.plural : "Choices"}>
        {shown.map((i, n) => (
          <div
            key={i.id}
            id={`${list}-${n}`}
            role="option"
            tabIndex={-1}
            aria-selected={n === p.active}
            onMouseDown={(e) => {
              e.preventDefault();
              p.pick(i);
            }}
          >
            {k ? choiceLabel(k, i) : i.id} <span class="picker-id">{i.id}</span>
          </div>
        ))}
      </div>
    </div>
  );
}

/** A picker's state: the text shown, the items found for it, the one chosen (its id), and the searches as the text changes. */
function usePicker(k: ConsoleKind | undefined, who: Identity, value: string, onValue: (v: string) => void) {
  const [text, setText] = useState(value);
  const [open, setOpen] = useState(false);
  const [options, setOptions] = useState<Item[] | undefined>();
  const [active, setActive] = useState(-1);
  const [chosen, setChosen] = useState<string | undefined>();
  // A value from outside (the item edited, a prefilled parent): shown by its item's name.
  useEffect(() => {
    if (value === chosen) return;
    setText(value);
    if (k && UUID.test(value) && visibleTo(k, who))
      void nameOf(k, refPath(k, value)).then((n) => {
        if (n) {
          setChosen(value);
          setText(n);
        }
      });
  }, [value]);
  // Typing searches once it pauses (250 ms).
  useEffect(() => {
    if (!open || !k || !visibleTo(k, who)) return;
    let live = true;
    const t = setTimeout(() => {
      search(k, text === choiceName(options, chosen) ? "" : text).then(
        (found) => {
          if (!live) return;
          setOptions(found);
          setActive(-1);
        },
        () => live && setOptions([]),
      );
    }, 250);
    return () => {
      live = false;
      clearTimeout(t);
    };
  }, [text, open]);
  const pick = (i: Item) => {
    setChosen(String(i.id));
    setText(k ? choiceLabel(k, i) : String(i.id));
    setOpen(false);
    onValue(String(i.id));
  };
  const type = (t: string) => {
    setText(t);
    setOpen(true);
    setChosen(undefined);
    onValue(t.trim());
  };
  return { text, open, setOpen, options, active, setActive, chosen, pick, type };
}

/** The label of the chosen item among the options (the text is then a choice, not a search). */
function choiceName(options: Item[] | undefined, chosen: string | undefined): string | undefined {
  const i = options?.find((o) => o.id === chosen);
  const k = i ? kindOfPath(new URL(String(i.uri ?? ""), location.href).pathname) : undefined;
  return i && k ? choiceLabel(k, i) : undefined;
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

/**
 * A link to an item another one names, named by its name once read (with its id, unless
 * `short`: a table's cell); its id alone when the user cannot read it.
 */
export function RefLink({ target, id, short }: { target: { kind: ConsoleKind; path: string }; id: string; short?: boolean }) {
  const { kind: k, path } = target;
  const [name, setName] = useState<string | undefined>();
  const [hidden, setHidden] = useState(false);
  useEffect(() => {
    setHidden(false);
    let live = true;
    void nameOf(k, path).then((n) => {
      if (!live) return;
      if (n === undefined) setHidden(true);
      else setName(n);
    });
    return () => {
      live = false;
    };
  }, [path]);
  if (hidden) return <>{id}</>;
  return (
    <a href={href({ page: "item", kind: k.kind, path })} data-ref={k.kind} title={id}>
      {name && name !== id ? (short ? name : `${name} (${id})`) : id}
    </a>
  );
}
