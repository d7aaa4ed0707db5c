// References between kinds: a field holding another item's id (a port's peerId, a route's
// nextHopPort, a binding's portId; the catalog says which kind, ConsoleField.ref) is a picker of
// the items of that kind the user can see in a form, and a link to that item on an item's page.
// A field holding a list of ids (a bridge's inboundMirrorIds, a rule's inPorts) is a picker of
// several, each chosen item shown by its name with a button taking it away, and a list of links.
import { useEffect, useRef, useState } from "preact/hooks";
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

/** How many items a picker shows before anything is typed, and searches among by part of a name. */
export const PICKER_FIRST = 500;

/** An item found for a picker, with a person's word for it (labelOf). */
type Found = { item: Item; label: string };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Items read for links and pickers, by path, for a minute: a table of twenty rows naming the same
 * router reads it once. Undefined when it cannot be read.
 */
const read = new Map<string, { at: number; item: Promise<Item | undefined> }>();
function itemAt(path: string): Promise<Item | undefined> {
  const hit = read.get(path);
  if (hit && Date.now() - hit.at < 60_000) return hit.item;
  const item = call("GET", path).then(
    (a) => a.body,
    () => undefined,
  );
  read.set(path, { at: Date.now(), item });
  return item;
}

/**
 * A person's word for an item: its name. An item of a kind without names (a port, a mirror) is
 * said by its kind's first columns' values, each naming another item said by that item's word in
 * turn, two references deep (a port: "Bridge · web", its type and its device; a mirror, by the
 * port it sends to: "Bridge · web"); else by its id, or the key of its path.
 */
export async function labelOf(k: ConsoleKind, item: Item, path?: string, depth = 2): Promise<string> {
  const name = k.nameField ? item?.[k.nameField] : undefined;
  if (typeof name === "string" && name !== "") return name;
  const id = typeof item?.id === "string" ? item.id : undefined;
  if (id === undefined && path) return itemName(k, item, path);
  const columns = k.columns.filter((c) => c !== "id" && typeof item?.[c] === "string" && item[c] !== "").slice(0, 2);
  const words = await Promise.all(
    columns.map(async (c) => {
      const f = k.fields.find((x) => x.name === c);
      const target = f && depth > 0 ? refTarget(k, f, item) : undefined;
      const other = target ? await itemAt(target.path) : undefined;
      return target && other !== undefined ? labelOf(target.kind, other, target.path, depth - 1) : String(item[c]);
    }),
  );
  return words.length > 0 ? words.join(" · ") : (id ?? "");
}

/** The items with their words. */
const labelled = (k: ConsoleKind, items: Item[]): Promise<Found[]> => Promise.all(items.map(async (item) => ({ item, label: await labelOf(k, item) })));

/** The first items of a kind with their words, read once per 30 s for every picker and keystroke. */
const firsts = new Map<string, { at: number; items: Promise<Found[]> }>();
function firstItems(k: ConsoleKind, path: string): Promise<Found[]> {
  const hit = firsts.get(path);
  if (hit && Date.now() - hit.at < 30_000) return hit.items;
  const items = listAll(k, path, PICKER_FIRST).then((r) => labelled(k, r.items));
  firsts.set(path, { at: Date.now(), items });
  items.catch(() => firsts.delete(path));
  return items;
}

/** A person's word for the item at `path` (labelOf), read once a minute; undefined when it cannot be read. */
export function nameOf(k: ConsoleKind, path: string): Promise<string | undefined> {
  return itemAt(path).then((i) => (i === undefined ? undefined : labelOf(k, i, path)));
}

/**
 * The items of `k` a search finds: with nothing typed, the first ones; else, asked of the API at
 * once, the items whose name is the text (`?name=`, on every page) and the item whose id it is,
 * then those of the first PICKER_FIRST (read once for 30 s) whose word (labelOf) or id holds it.
 */
async function search(k: ConsoleKind, text: string): Promise<Found[]> {
  const target = fillPath(k.listTemplates, undefined);
  if (!target.path) return [];
  const t = text.trim();
  const first = firstItems(k, target.path);
  if (t === "") return first;
  const exact = k.nameField && k.filters.includes(k.nameField) ? listAll(k, target.path, 20, { [k.nameField]: t }).then((r) => labelled(k, r.items), () => []) : Promise.resolve([]);
  const byId = UUID.test(t) ? call("GET", refPath(k, t)).then((a) => labelled(k, [a.body]), () => []) : Promise.resolve([]);
  const lower = t.toLowerCase();
  const some = (await first).filter((f) => f.label.toLowerCase().includes(lower) || String(f.item?.id ?? "").startsWith(lower));
  const seen = new Set<string>();
  return [...(await exact), ...(await byId), ...some].filter((f) => {
    const id = String(f.item?.id ?? "");
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
  const p = usePicker(k, who, value, onValue);
  return (
    <div class="picker">
      <Combobox k={k} common={common} p={p} />
      {k && p.chosen && value === p.chosen && (
        <span class="help picker-id">
          <a href={href({ page: "item", kind: k.kind, path: refPath(k, p.chosen) })}>{p.chosen}</a>
        </span>
      )}
    </div>
  );
}

/** The ids a list field's form value holds ("a, b"). */
const idsOf = (v: string) =>
  v
    .split(",")
    .map((x) => x.trim())
    .filter(Boolean);

/**
 * A picker of several items of `refKind`, for a field holding a list of ids (a bridge's mirrors,
 * a rule's ports): the items chosen, in order, each by its name with a button taking it away,
 * then a text box searching as RefPicker's does, offering the items not chosen yet; choosing an
 * item adds it. The form's value is
 * the ids separated by commas, text typed and not chosen last (sent as typed, so the API names
 * a mistake on the field).
 */
export function RefListPicker({ refKind, who, common, value, onValue }: { refKind: string; who: Identity; common: Record<string, unknown>; value: string; onValue: (v: string) => void }) {
  const k = KINDS.get(refKind);
  const [chosen, setChosen] = useState<string[]>(() => idsOf(value));
  const typed = useRef("");
  // The values this picker gave the form that have not come back yet, oldest first: one coming
  // back is its own, another is from outside (the item edited, the current values of a conflict
  // taken). Effects run after the browser paints, so the echo of an earlier value (the text
  // typed) can come after the picker sent a later one (the item then chosen); taken as from
  // outside, it made the text typed a chosen item.
  const pending = useRef([value]);
  const send = (ids: string[], text: string) => {
    typed.current = text;
    const v = [...ids, text.trim()].filter(Boolean).join(", ");
    pending.current = [...pending.current.slice(-99), v];
    onValue(v);
  };
  const p = usePicker(k, who, undefined, (t) => send(chosen, t), (f) => {
    const id = String(f.item.id);
    const ids = [...chosen.filter((x) => x !== id), id];
    setChosen(ids);
    send(ids, "");
  });
  useEffect(() => {
    const own = pending.current.indexOf(value);
    if (own >= 0) {
      pending.current = pending.current.slice(own + 1);
      return;
    }
    pending.current = [];
    setChosen(idsOf(value));
    p.setText("");
  }, [value]);
  const remove = (id: string) => {
    const ids = chosen.filter((x) => x !== id);
    setChosen(ids);
    send(ids, typed.current);
  };
  const label = typeof common["id"] === "string" ? `${common["id"]}-chosen` : undefined;
  return (
    <div class="picker">
      {chosen.length > 0 && (
        <ul class="picker-chosen" id={label} aria-label={k ? `Chosen ${inSentence(k.plural)}` : "Chosen"}>
          {chosen.map((id) => (
            <Chosen key={id} k={k} id={id} who={who} onRemove={() => remove(id)} />
          ))}
        </ul>
      )}
      <Combobox
        k={k}
        common={common}
        p={p}
        without={chosen}
        onBackspace={() => {
          const last = chosen.at(-1);
          if (last) remove(last);
        }}
      />
    </div>
  );
}

/** One item a list picker holds: its name (its id when it has none or cannot be read) and a button taking it away. */
function Chosen({ k, id, who, onRemove }: { k: ConsoleKind | undefined; id: string; who: Identity; onRemove: () => void }) {
  const [name, setName] = useState<string | undefined>();
  useEffect(() => {
    let live = true;
    if (k && UUID.test(id) && visibleTo(k, who)) void nameOf(k, refPath(k, id)).then((n) => live && setName(n));
    return () => {
      live = false;
    };
  }, [id]);
  const shown = name && name !== id ? name : id;
  return (
    <li>
      <span title={id}>
        {shown}
        {k && !k.nameField && shown !== id && <span class="picker-id"> {id.slice(0, 8)}</span>}
      </span>
      <button type="button" class="link" aria-label={`Remove ${shown}`} onClick={onRemove}>
        ×
      </button>
    </li>
  );
}

/** The text box of a picker and the list of items found under it (an ARIA combobox). */
function Combobox({ k, common, p, onBackspace, without = [] }: { k: ConsoleKind | undefined; common: Record<string, unknown>; p: ReturnType<typeof usePicker>; onBackspace?: () => void; without?: string[] }) {
  const list = `${String(common["id"])}-options`;
  const shown = (p.options ?? []).filter((f) => !without.includes(String(f.item?.id)));
  const onKeyDown = (e: KeyboardEvent) => {
    if (e.key === "ArrowDown") {
      e.preventDefault();
      p.setOpen(true);
      p.setActive(Math.min(shown.length - 1, p.active + 1));
    } else if (e.key === "ArrowUp") {
      e.preventDefault();
      p.setActive(Math.max(0, p.active - 1));
    } else if (e.key === "Enter" && p.open && shown[p.active]) {
      e.preventDefault();
      p.pick(shown[p.active]!);
    } else if (e.key === "Escape") p.setOpen(false);
    else if (e.key === "Backspace" && p.text === "" && onBackspace) onBackspace();
  };
  return (
    <div class="picker-box">
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
      <div id={list} role="listbox" tabindex={-1} class="picker-options" hidden={!p.open || shown.length === 0} aria-label={k ? k.plural : "Choices"}>
        {shown.map((f, n) => (
          <div
            key={f.item.id}
            id={`${list}-${n}`}
            role="option"
            tabIndex={-1}
            aria-selected={n === p.active}
            onMouseDown={(e) => {
              e.preventDefault();
              p.pick(f);
            }}
          >
            {f.label} <span class="picker-id">{f.item.id}</span>
          </div>
        ))}
      </div>
    </div>
  );
}

/**
 * A picker's state: the text shown, the items found for it, the one chosen (its id), and the
 * searches as the text changes. `value` is the form's (a picker of one); undefined for a picker
 * of several, whose `onPick` takes each item chosen, the text then emptied for the next.
 */
function usePicker(k: ConsoleKind | undefined, who: Identity, value: string | undefined, onValue: (v: string) => void, onPick?: (f: Found) => void) {
  const [text, setText] = useState(value ?? "");
  const [open, setOpen] = useState(false);
  const [options, setOptions] = useState<Found[] | undefined>();
  const [active, setActive] = useState(-1);
  const [chosen, setChosen] = useState<string | undefined>();
  // The text shown for the item chosen: no search of its own (the first items are offered).
  const [chosenText, setChosenText] = useState<string | undefined>();
  // A value from outside (the item edited, a prefilled parent): shown by its item's name.
  useEffect(() => {
    if (value === undefined || value === chosen) return;
    setText(value);
    if (k && UUID.test(value) && visibleTo(k, who))
      void nameOf(k, refPath(k, value)).then((n) => {
        if (n) {
          setChosen(value);
          setChosenText(n);
          setText(n);
        }
      });
  }, [value]);
  // Typing searches once it pauses (250 ms).
  useEffect(() => {
    if (!open || !k || !visibleTo(k, who)) return;
    let live = true;
    const t = setTimeout(() => {
      search(k, chosen !== undefined && text === chosenText ? "" : text).then(
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
  const pick = (f: Found) => {
    setOpen(false);
    if (onPick) {
      setText("");
      onPick(f);
      return;
    }
    setChosen(String(f.item.id));
    setChosenText(f.label);
    setText(f.label);
    onValue(String(f.item.id));
  };
  const type = (t: string) => {
    setText(t);
    setOpen(true);
    setChosen(undefined);
    onValue(onPick ? t : t.trim());
  };
  return { text, setText, open, setOpen, options, active, setActive, chosen, pick, type };
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

/** The items a list field's ids lead to (a bridge's mirrors, a rule's ports), when the catalog says of which kind. */
// biome-ignore lint/suspicious/noExplicitAny: an item of any kind
export function refTargets(f: ConsoleField, item: any): { id: string; target: { kind: ConsoleKind; path: string } }[] | undefined {
  const v = item?.[f.name];
  const k = f.repeated && f.ref ? KINDS.get(f.ref) : undefined;
  if (!k || !Array.isArray(v)) return undefined;
  return v.filter((id): id is string => typeof id === "string" && id !== "").map((id) => ({ id, target: { kind: k, path: refPath(k, id) } }));
}

/** A list field's items as links named by their names (see RefLink), "—" when it holds none. */
export function RefLinks({ targets, short }: { targets: { id: string; target: { kind: ConsoleKind; path: string } }[]; short?: boolean }) {
  if (targets.length === 0) return <>—</>;
  return (
    <ul class="ref-list">
      {targets.map((t) => (
        <li key={t.id}>
          <RefLink target={t.target} id={t.id} short={short} />
        </li>
      ))}
    </ul>
  );
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
