// A kind's list: its columns from the catalog, the API's paging (limit and marker, the next
// page from the Link header), the API's own filters (docs/api.md "Filters": `?name=`, each
// scalar field by equality, an admin's `?tenant_id=`), so a match on any page is found, and a
// sort by a column. On the list's own page the filters and the sort order are the address's
// query (#/list/bridge.Bridge?name=web&sort=-name): reload and back keep them. Edit and delete
// per row. It follows the change feed: an item of its kind created, changed or deleted
// anywhere reloads the page shown. It says when it is loading, empty, not the user's to see,
// or offline (the gateway does not answer, or a service behind it is down): then it keeps
// what it showed and retries, each wait twice the last (2 s to 30 s), or at once on "Retry
// now", when the browser is back online or the tab is shown again.
import type { RefObject } from "preact";
import { useCallback, useEffect, useMemo, useRef, useState } from "preact/hooks";
import { ApiError, type Identity, call, isUnavailable } from "./api.ts";
import { onChange } from "./events.ts";
import { canWrite, fillPath, itemName, itemPath, KINDS } from "./kinds.ts";
import type { ConsoleField, ConsoleKind } from "./model.ts";
import { listAll, RefLink, RefLinks, RefPicker, refTarget, refTargets } from "./refs.tsx";
import { href } from "./route.ts";
import { DeleteDialog, ErrorNote, listing, show } from "./ui.tsx";
import { fieldLabel, inSentence } from "./words.ts";

export const PAGE_SIZE = 20;
/** The most items a sorted list reads to sort (the API lists in its own order and cannot sort). */
export const SORT_MAX = 1000;
const RETRY_MS = [2_000, 4_000, 8_000, 16_000, 30_000];

/** The marker of the next page, from a Link header's rel="next". */
function nextMarker(link: string | null): string | undefined {
  const m = link ? /<([^>]+)>\s*;\s*rel="?next"?/.exec(link) : null;
  return m ? (new URL(m[1]!, location.href).searchParams.get("marker") ?? undefined) : undefined;
}

// biome-ignore lint/suspicious/noExplicitAny: items of any kind
type Item = any;

/** A list's state as its address keeps it: the API's filters (tenant_id among them) and the sort ("name", "-name"). */
export interface ListQuery {
  filters: Record<string, string>;
  sort?: string;
}

export function parseListQuery(kind: ConsoleKind, query: string | undefined): ListQuery {
  const q = new URLSearchParams(query ?? "");
  const filters: Record<string, string> = {};
  for (const [k, v] of q) if (v !== "" && (kind.filters.includes(k) || (k === "tenant_id" && kind.listQuery.includes(k)))) filters[k] = v;
  const sort = q.get("sort") ?? undefined;
  return { filters, sort: sort && kind.columns.includes(sort.replace(/^-/, "")) ? sort : undefined };
}

export function listQueryString(q: ListQuery): string {
  const p = new URLSearchParams(Object.entries(q.filters).filter(([, v]) => v !== ""));
  if (q.sort) p.set("sort", q.sort);
  return p.toString();
}

/** Two values in a person's order: numbers as numbers, text case-insensitively, empty last. */
function compare(a: unknown, b: unknown): number {
  const empty = (v: unknown) => v === null || v === undefined || v === "";
  if (empty(a) || empty(b)) return Number(empty(a)) - Number(empty(b));
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(a).localeCompare(String(b), undefined, { numeric: true, sensitivity: "base" });
}

type Status = { kind: "loading" } | { kind: "ready" } | { kind: "offline"; retryAt: number; error: unknown } | { kind: "error"; error: unknown };

/**
 * The page of a list at `path`: its items, the next page's marker and its status. Filtered by
 * the API; sorted, it reads up to SORT_MAX items and pages them itself. Asked for again when any
 * of them changes, and when a change of this kind (below this parent, for a child list) or a
 * resync arrives; while offline, on the back-off's schedule.
 */
function useListPage(kind: ConsoleKind, parentPath: string | undefined, path: string | undefined, marker: string | undefined, query: ListQuery, pageNo: number) {
  const [items, setItems] = useState<Item[] | undefined>();
  const [next, setNext] = useState<string | undefined>();
  const [status, setStatus] = useState<Status>({ kind: "loading" });
  const [capped, setCapped] = useState(false);
  const paged = kind.listQuery.includes("limit");
  const failures = useRef(0);
  const retry = useRef<ReturnType<typeof setTimeout>>(undefined);
  // A filter just added and not yet given a value is not sent.
  const sent = Object.fromEntries(Object.entries(query.filters).filter(([, v]) => v.trim() !== ""));
  const filterKey = JSON.stringify(sent);

  // Answers may arrive out of order (a page asked for, a change meanwhile): only the last asked counts.
  const asked = useRef(0);
  const load = useCallback(async () => {
    if (!path) return;
    clearTimeout(retry.current);
    const n = ++asked.current;
    try {
      if (query.sort) {
        const all = await listAll(kind, path, SORT_MAX, sent);
        if (n !== asked.current) return;
        const key = query.sort.replace(/^-/, "");
        const sign = query.sort.startsWith("-") ? -1 : 1;
        const sorted = [...all.items].sort((a, b) => sign * compare(a[key], b[key]));
        setItems(sorted.slice(pageNo * PAGE_SIZE, (pageNo + 1) * PAGE_SIZE));
        setNext(sorted.length > (pageNo + 1) * PAGE_SIZE ? String(pageNo + 1) : undefined);
        setCapped(all.more);
      } else {
        const q = new URLSearchParams(sent);
        if (paged) q.set("limit", String(PAGE_SIZE));
        if (marker) q.set("marker", marker);
        const a = await call("GET", `${path}${q.size ? `?${q}` : ""}`);
        if (n !== asked.current) return;
        setItems(Array.isArray(a.body) ? a.body : []);
        setNext(nextMarker(a.headers.get("link")));
        setCapped(false);
      }
      failures.current = 0;
      setStatus({ kind: "ready" });
    } catch (err) {
      if (n !== asked.current) return;
      if (isUnavailable(err)) {
        // Offline: what was shown stays, marked so; the next try waits longer.
        const wait = RETRY_MS[Math.min(failures.current, RETRY_MS.length - 1)]!;
        failures.current++;
        setStatus({ kind: "offline", retryAt: Date.now() + wait, error: err });
        retry.current = setTimeout(() => void load(), wait);
      } else {
        setStatus({ kind: "error", error: err });
        setItems(undefined);
      }
    }
  }, [path, marker, filterKey, query.sort, pageNo, paged, kind]);

  useEffect(() => {
    void load();
    return () => clearTimeout(retry.current);
  }, [load]);

  useRetryWhenBack(status.kind === "offline", load);

  // Live: changes of this kind (below this parent, for a child list) reload the page shown, as
  // it is then (a change arriving just before the filters changed must not read the old ones).
  const latest = useRef(load);
  latest.current = load;
  const timer = useRef<ReturnType<typeof setTimeout>>(undefined);
  useEffect(
    () =>
      onChange((c) => {
        const mine = c.kind === kind.eventName && (!parentPath || c.path.startsWith(`${parentPath}/`));
        if (!mine && c.event !== "resync") return;
        clearTimeout(timer.current);
        timer.current = setTimeout(() => void latest.current(), 150);
      }),
    [kind, parentPath],
  );
  useEffect(() => () => clearTimeout(timer.current), []);
  return { items, next, status, capped, load };
}

/** The variables of a list's path the person gives (not the parent's), asked whether given yet or not: a picker stays while typed in. */
function listVariables(template: string | undefined, parentPath: string | undefined): string[] {
  if (!template) return [];
  const given = parentPath ? parentPath.split("/").length - 1 : 0;
  return template
    .split("/")
    .slice(1)
    .flatMap((s, i) => (i >= given && /^\{\w+\}$/.test(s) ? [s.slice(1, -1)] : []));
}

/** Back online, or the tab shown again, while offline: `load` at once. */
function useRetryWhenBack(offline: boolean, load: () => Promise<void>) {
  useEffect(() => {
    if (!offline) return;
    const now = () => {
      if (document.visibilityState === "visible") void load();
    };
    addEventListener("online", now);
    document.addEventListener("visibilitychange", now);
    return () => {
      removeEventListener("online", now);
      document.removeEventListener("visibilitychange", now);
    };
  }, [offline, load]);
}

/** The list's heading (a page's h1 taking focus, or a child list's h2) and its New link. */
function ListHead({ kind, uid, who, parentPath, heading }: { kind: ConsoleKind; uid: string; who: Identity; parentPath?: string; heading?: RefObject<HTMLHeadingElement | null> }) {
  return (
    <div class="list-head">
      {heading ? (
        <h1 id={`${uid}-title`} tabindex={-1} ref={heading}>
          {kind.plural}
        </h1>
      ) : (
        <h2 id={`${uid}-title`}>{kind.plural}</h2>
      )}
      {canWrite(who) && kind.createTemplates.length > 0 && (
        <a class="button" href={href({ page: "new", kind: kind.kind, parent: parentPath })}>
          New {inSentence(kind.singular)}
        </a>
      )}
    </div>
  );
}

/** A text filter applied once typing pauses (300 ms). */
function useTyped(value: string, apply: (v: string) => void): [string, (v: string) => void] {
  const [typed, setTyped] = useState(value);
  useEffect(() => setTyped(value), [value]);
  useEffect(() => {
    if (typed === value) return;
    const t = setTimeout(() => apply(typed), 300);
    return () => clearTimeout(t);
  }, [typed]);
  return [typed, setTyped];
}

type FiltersProps = {
  kind: ConsoleKind;
  who: Identity;
  uid: string;
  missing: string[];
  values: Record<string, string>;
  onValues: (v: Record<string, string>) => void;
  filters: Record<string, string>;
  /** Other fields may be added as filters (a list's own page; a child list on its parent's page keeps to its name). */
  byField: boolean;
  /** Changes the filters from their latest value (two boxes applying at once do not undo each other). */
  onFilters: (change: (f: Record<string, string>) => Record<string, string>) => void;
};

/**
 * The path's missing variables, the tenant filter (an admin's, where the API takes tenant_id),
 * the name (the API's `?name=`, an exact match on every page) and any other field the API
 * filters by, added from a list.
 */
function ListFilters({ kind, who, uid, missing, values, onValues, filters, byField, onFilters }: FiltersProps) {
  const set = (name: string, v: string) =>
    onFilters((now) => {
      const next = { ...now, [name]: v };
      if (v === "") delete next[name];
      return next;
    });
  const [tenant, setTenant] = useTyped(filters["tenant_id"] ?? "", (v) => set("tenant_id", v.trim()));
  const [name, setName] = useTyped(kind.nameField ? (filters[kind.nameField] ?? "") : "", (v) => set(kind.nameField!, v.trim()));
  const fields = new Map(kind.fields.map((f) => [f.name, f]));
  const others = byField ? kind.filters.filter((f) => f !== kind.nameField && f !== kind.tenantField) : [];
  const shownOthers = others.filter((f) => f in filters);
  const [adding, setAdding] = useState("");
  return (
    <form class="filters" onSubmit={(e) => e.preventDefault()} aria-label={`Filter ${inSentence(kind.plural)}`}>
      {missing.map((v) =>
        kind.pathRefs[v] ? (
          <div class="path-picker" key={v}>
            <label for={`${uid}-${v}`}>{KINDS.get(kind.pathRefs[v])?.singular ?? fieldLabel(v)}</label>
            <RefPicker refKind={kind.pathRefs[v]} who={who} common={{ id: `${uid}-${v}`, required: true }} value={values[v] ?? ""} onValue={(x) => onValues({ ...values, [v]: x })} />
          </div>
        ) : (
          <label key={v}>
            {fieldLabel(v)}
            <input value={values[v] ?? ""} onChange={(e) => onValues({ ...values, [v]: e.currentTarget.value })} required />
          </label>
        ),
      )}
      {who.role === "admin" && kind.listQuery.includes("tenant_id") && (
        <label>
          Tenant
          <input value={tenant} onInput={(e) => setTenant(e.currentTarget.value)} placeholder="any" />
        </label>
      )}
      {kind.nameField && kind.filters.includes(kind.nameField) && (
        <label>
          Name is
          <input type="search" value={name} onInput={(e) => setName(e.currentTarget.value)} placeholder="any" aria-describedby={`${uid}-name-help`} />
          <span class="help filter-help" id={`${uid}-name-help`}>
            The whole name, found on every page
          </span>
        </label>
      )}
      {shownOthers.map((f) => (
        <FieldFilter key={f} field={fields.get(f)} name={f} value={filters[f]!} onValue={(v) => set(f, v)} onRemove={() => set(f, "")} />
      ))}
      {others.length > shownOthers.length && (
        <label>
          Filter by
          <select
            value={adding}
            onChange={(e) => {
              const f = e.currentTarget.value;
              setAdding("");
              if (f) set(f, fields.get(f)?.type === "boolean" ? "true" : " ");
            }}
          >
            <option value="">another field…</option>
            {others
              .filter((f) => !(f in filters))
              .map((f) => (
                <option key={f} value={f}>
                  {fields.get(f)?.label ?? fieldLabel(f)}
                </option>
              ))}
          </select>
        </label>
      )}
    </form>
  );
}

/** One field filter: its value (a choice where the field has a few) and a button taking it away. */
function FieldFilter({ field, name, value, onValue, onRemove }: { field?: ConsoleField; name: string; value: string; onValue: (v: string) => void; onRemove: () => void }) {
  const [typed, setTyped] = useTyped(value.trim(), (v) => onValue(v.trim() === "" ? " " : v.trim()));
  const label = field?.label ?? fieldLabel(name);
  const choices = field?.type === "boolean" ? ["true", "false"] : field?.enumValues;
  const id = `filter-${name}`;
  return (
    <span class="field-filter">
      <label for={id}>{label} is</label>
      {choices ? (
          <select id={id} value={value} onChange={(e) => onValue(e.currentTarget.value)}>
            {choices.map((c) => (
              <option key={c} value={c}>
                {c === "true" ? "yes" : c === "false" ? "no" : c}
              </option>
            ))}
          </select>
        ) : (
          <input id={id} value={typed} onInput={(e) => setTyped(e.currentTarget.value)} />
        )}
      <button type="button" class="link" aria-label={`Remove the filter on ${inSentence(label)}`} onClick={onRemove}>
        ×
      </button>
    </span>
  );
}

/** A cell's value: another item's id as a link named by the item's name (a list of ids, a list of such links); else the value as text. */
function Cell({ kind, field, item }: { kind: ConsoleKind; field?: ConsoleField; item: Item }) {
  const target = field ? refTarget(kind, field, item) : undefined;
  if (field && target) return <RefLink target={target} id={String(item[field.name])} short />;
  const targets = field ? refTargets(field, item) : undefined;
  if (targets) return <RefLinks targets={targets} short />;
  return <>{show(field, field ? item[field.name] : undefined)}</>;
}

/** One item's row: its columns (the first a link to it), then Edit and Delete where the user may write. */
export function ListRow({ kind, item, parentPath, writes, onDelete }: { kind: ConsoleKind; item: Item; parentPath?: string; writes: boolean; onDelete?: (d: { name: string; path: string }) => void }) {
  const fields = new Map(kind.fields.map((f) => [f.name, f]));
  const path = itemPath(kind, item, parentPath);
  const name = itemName(kind, item, path);
  return (
    <tr>
      {kind.columns.map((c, i) => (
        <td key={c} data-label={fields.get(c)?.label ?? c} class={c === "id" ? "id" : undefined}>
          {i === 0 || c === kind.key ? (
            <a href={href({ page: "item", kind: kind.kind, path })}>{show(fields.get(c), item[c]) === "—" ? name : show(fields.get(c), item[c])}</a>
          ) : (
            <Cell kind={kind} field={fields.get(c)} item={item} />
          )}
        </td>
      ))}
      {onDelete && (
        <td class="row-actions">
          {writes && kind.canUpdate && (
            <a href={href({ page: "edit", kind: kind.kind, path })} aria-label={`Edit ${name}`}>
              Edit
            </a>
          )}
          {writes && kind.canDelete && (
            <button type="button" class="link danger" aria-label={`Delete ${name}`} onClick={() => onDelete({ name, path })}>
              Delete
            </button>
          )}
        </td>
      )}
    </tr>
  );
}

type TableProps = {
  kind: ConsoleKind;
  uid: string;
  items: Item[];
  filtered: boolean;
  parentPath?: string;
  writes: boolean;
  sort?: string;
  onSort?: (s: string | undefined) => void;
  onDelete: (d: { name: string; path: string }) => void;
};

/** The items of the page, or why there is none; a column's heading sorts by it (again: the other way; a third time: the API's order). */
function ListTable({ kind, uid, items, filtered, parentPath, writes, sort, onSort, onDelete }: TableProps) {
  const fields = new Map(kind.fields.map((f) => [f.name, f]));
  return (
    <section class="table-wrap" tabindex={0} aria-labelledby={`${uid}-title`}>
      <table>
        <thead>
          <tr>
            {kind.columns.map((c) => {
              const label = fields.get(c)?.label ?? c;
              const dir = sort === c ? "ascending" : sort === `-${c}` ? "descending" : undefined;
              return (
                <th key={c} scope="col" aria-sort={dir}>
                  {onSort ? (
                    <button type="button" class="sort" onClick={() => onSort(dir === undefined ? c : dir === "ascending" ? `-${c}` : undefined)}>
                      {label}
                      <span aria-hidden="true">{dir === "ascending" ? " ▲" : dir === "descending" ? " ▼" : ""}</span>
                    </button>
                  ) : (
                    label
                  )}
                </th>
              );
            })}
            <th scope="col">
              <span class="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {items.length === 0 && (
            <tr>
              <td colSpan={kind.columns.length + 1}>{`No ${inSentence(kind.plural)}.${filtered ? " Nothing matches these filters." : ""}`}</td>
            </tr>
          )}
          {items.map((item) => (
            <ListRow key={itemPath(kind, item, parentPath)} kind={kind} item={item} parentPath={parentPath} writes={writes} onDelete={onDelete} />
          ))}
        </tbody>
      </table>
    </section>
  );
}

/** Previous and next page: markers of the pages before the one shown, and the next one's from the Link header. */
function Pager({ kind, markers, next, onMarkers }: { kind: ConsoleKind; markers: (string | undefined)[]; next: string | undefined; onMarkers: (m: (string | undefined)[]) => void }) {
  return (
    <nav class="pager" aria-label={`${kind.plural} pages`}>
      <button type="button" disabled={markers.length <= 1} onClick={() => onMarkers(markers.slice(0, -1))}>
        Previous page
      </button>
      <span>Page {markers.length}</span>
      <button type="button" disabled={!next} onClick={() => onMarkers([...markers, next])}>
        Next page
      </button>
    </nav>
  );
}

/** The offline state: what is shown is the last answer; when the next try comes, and a button for now. */
function Offline({ retryAt, error, onRetry }: { retryAt: number; error: unknown; onRetry: () => void }) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, []);
  const seconds = Math.max(0, Math.ceil((retryAt - now) / 1000));
  const why = error instanceof ApiError ? `A service behind the gateway is unavailable (${error.status}: ${error.message}).` : "The gateway does not answer.";
  return (
    <div class="offline" role="status">
      <p>
        <strong>Offline, retrying.</strong> {why} Trying again {seconds > 0 ? `in ${seconds} s` : "now"}; what is shown below is from before.
      </p>
      <button type="button" onClick={onRetry}>
        Retry now
      </button>
    </div>
  );
}

export function ListView({
  kind,
  who,
  parentPath,
  heading,
  query,
  onQuery,
}: {
  kind: ConsoleKind;
  who: Identity;
  parentPath?: string;
  heading?: RefObject<HTMLHeadingElement | null>;
  /** The list's state from the address, for the list's own page. */
  query?: string;
  onQuery?: (q: string) => void;
}) {
  const [values, setValues] = useState<Record<string, string>>({});
  const [state, setState] = useState<ListQuery>(() => parseListQuery(kind, query));
  // Markers of the pages before the one shown (paging back), and the shown one's.
  const [markers, setMarkers] = useState<(string | undefined)[]>([undefined]);
  const [deleting, setDeleting] = useState<{ name: string; path: string } | undefined>();
  const target = fillPath(kind.listTemplates, parentPath, values);
  // A sorted list pages itself: its "markers" are page numbers.
  const pageNo = state.sort ? Number(markers.at(-1) ?? 0) : 0;
  const { items, next, status, capped, load } = useListPage(kind, parentPath, target.path, state.sort ? undefined : markers.at(-1), state, pageNo);
  const uid = `${kind.kind.replace(/\W/g, "-")}-${parentPath ? "child" : "top"}`;
  const update = (change: (q: ListQuery) => ListQuery) => {
    setState((now) => {
      const q = change(now);
      onQuery?.(listQueryString(q));
      return q;
    });
    setMarkers([undefined]);
  };
  const filtered = useMemo(() => Object.values(state.filters).some((v) => v.trim() !== ""), [state.filters]);

  return (
    <div class="list">
      <ListHead kind={kind} uid={uid} who={who} parentPath={parentPath} heading={heading} />
      <ListFilters
        kind={kind}
        who={who}
        uid={uid}
        missing={listVariables(target.template, parentPath)}
        values={values}
        onValues={setValues}
        filters={state.filters}
        byField={onQuery !== undefined}
        onFilters={(change) => update((q) => ({ ...q, filters: change(q.filters) }))}
      />
      {target.missing.length > 0 && <p>Give the {listing(target.missing.map(fieldLabel))} to list them.</p>}
      {status.kind === "offline" && <Offline retryAt={status.retryAt} error={status.error} onRetry={() => void load()} />}
      {status.kind === "error" && (
        <ErrorNote
          error={
            status.error instanceof ApiError && status.error.status === 403 ? `You may not list ${inSentence(kind.plural)} (${status.error.message}).` : status.error
          }
        />
      )}
      {status.kind === "loading" && target.path && (
        <p class="loading" role="status">
          Loading {inSentence(kind.plural)}…
        </p>
      )}
      {items && target.path && (
        <ListTable
          kind={kind}
          uid={uid}
          items={items}
          filtered={filtered}
          parentPath={parentPath}
          writes={canWrite(who)}
          sort={state.sort}
          onSort={onQuery ? (sort) => update((q) => ({ ...q, sort })) : undefined}
          onDelete={setDeleting}
        />
      )}
      {capped && <p class="help">Sorted among the first {SORT_MAX} only: the API lists in its own order, and this list holds more.</p>}
      {(kind.listQuery.includes("limit") || state.sort) && (markers.length > 1 || next) && <Pager kind={kind} markers={markers} next={next} onMarkers={setMarkers} />}
      {deleting && (
        <DeleteDialog
          kind={kind}
          name={deleting.name}
          path={deleting.path}
          onClose={(done) => {
            setDeleting(undefined);
            if (done) void load();
          }}
        />
      )}
    </div>
  );
}
