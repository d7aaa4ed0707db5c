// A kind's list: its columns from the catalog, the API's paging (limit and marker, the next
// page from the Link header), a tenant filter (the API's tenant_id) and a name filter, edit and
// delete per row. It follows the change feed: an item of its kind created, changed or deleted
// anywhere reloads the page shown.
import type { RefObject } from "preact";
import { useCallback, useEffect, useMemo, useRef, useState } from "preact/hooks";
import { type Identity, call } from "./api.ts";
import { onChange } from "./events.ts";
import { canWrite, fillPath, itemName, itemPath } from "./kinds.ts";
import type { ConsoleKind } from "./model.ts";
import { href } from "./route.ts";
import { DeleteDialog, ErrorNote, listing, show } from "./ui.tsx";
import { fieldLabel, inSentence } from "./words.ts";

export const PAGE_SIZE = 20;

/** The marker of the next page, from a Link header's rel="next". */
function nextMarker(link: string | null): string | undefined {
  const m = link ? /<([^>]+)>\s*;\s*rel="?next"?/.exec(link) : null;
  return m ? (new URL(m[1]!, location.href).searchParams.get("marker") ?? undefined) : undefined;
}

// biome-ignore lint/suspicious/noExplicitAny: items of any kind
type Item = any;

/**
 * The page of a list at `path` (with its marker and tenant filter): its items, the next page's
 * marker and the last error. It is asked for again when any of them changes, and when a change of
 * this kind (below this parent, for a child list) or a resync arrives.
 */
function useListPage(kind: ConsoleKind, parentPath: string | undefined, path: string | undefined, marker: string | undefined, tenant: string) {
  const [items, setItems] = useState<Item[] | undefined>();
  const [next, setNext] = useState<string | undefined>();
  const [error, setError] = useState<unknown>();
  const paged = kind.listQuery.includes("limit");

  // Answers may arrive out of order (a page asked for, a change meanwhile): only the last asked counts.
  const asked = useRef(0);
  const load = useCallback(async () => {
    if (!path) return;
    const n = ++asked.current;
    const q = new URLSearchParams();
    if (paged) q.set("limit", String(PAGE_SIZE));
    if (marker) q.set("marker", marker);
    if (tenant.trim() && kind.listQuery.includes("tenant_id")) q.set("tenant_id", tenant.trim());
    try {
      const a = await call("GET", `${path}${q.size ? `?${q}` : ""}`);
      if (n !== asked.current) return;
      setItems(Array.isArray(a.body) ? a.body : []);
      setNext(nextMarker(a.headers.get("link")));
      setError(undefined);
    } catch (err) {
      if (n !== asked.current) return;
      setError(err);
      setItems([]);
    }
  }, [path, marker, tenant, paged, kind]);

  useEffect(() => {
    void load();
  }, [load]);

  // Live: changes of this kind (below this parent, for a child list) reload the page shown.
  const timer = useRef<ReturnType<typeof setTimeout>>(undefined);
  useEffect(
    () =>
      onChange((c) => {
        const mine = c.kind === kind.eventName && (!parentPath || c.path.startsWith(`${parentPath}/`));
        if (!mine && c.event !== "resync") return;
        clearTimeout(timer.current);
        timer.current = setTimeout(() => void load(), 150);
      }),
    [load, kind, parentPath],
  );
  useEffect(() => () => clearTimeout(timer.current), []);
  return { items, next, error, load };
}

/** The tenant filter as typed and as applied: it applies once typing pauses, and then `onApply` runs. */
function useTenantFilter(onApply: () => void) {
  const [tenantInput, setTenantInput] = useState("");
  const [tenant, setTenant] = useState("");
  useEffect(() => {
    if (tenantInput === tenant) return;
    const t = setTimeout(() => {
      setTenant(tenantInput);
      onApply();
    }, 300);
    return () => clearTimeout(t);
  }, [tenantInput]);
  return { tenantInput, setTenantInput, tenant };
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

type FiltersProps = {
  kind: ConsoleKind;
  who: Identity;
  missing: string[];
  values: Record<string, string>;
  onValues: (v: Record<string, string>) => void;
  tenantInput: string;
  onTenant: (t: string) => void;
  nameFilter: string;
  onName: (n: string) => void;
};

/** The path's missing variables, the tenant filter (an admin's, where the API takes tenant_id) and the name filter. */
function ListFilters({ kind, who, missing, values, onValues, tenantInput, onTenant, nameFilter, onName }: FiltersProps) {
  return (
    <form class="filters" onSubmit={(e) => e.preventDefault()} aria-label={`Filter ${inSentence(kind.plural)}`}>
      {missing.map((v) => (
        <label key={v}>
          {fieldLabel(v)}
          <input value={values[v] ?? ""} onChange={(e) => onValues({ ...values, [v]: e.currentTarget.value })} required />
        </label>
      ))}
      {who.role === "admin" && kind.listQuery.includes("tenant_id") && (
        <label>
          Tenant
          <input value={tenantInput} onInput={(e) => onTenant(e.currentTarget.value)} placeholder="any" />
        </label>
      )}
      {kind.nameField && (
        <label>
          Name contains
          <input type="search" value={nameFilter} onInput={(e) => onName(e.currentTarget.value)} />
        </label>
      )}
    </form>
  );
}

/** One item's row: its columns (the first a link to it), then Edit and Delete where the user may write. */
function ListRow({ kind, item, parentPath, writes, onDelete }: { kind: ConsoleKind; item: Item; parentPath?: string; writes: boolean; onDelete: (d: { name: string; path: string }) => void }) {
  const fields = new Map(kind.fields.map((f) => [f.name, f]));
  const path = itemPath(kind, item, parentPath);
  const name = itemName(kind, item, path);
  return (
    <tr>
      {kind.columns.map((c, i) => (
        <td key={c} data-label={fields.get(c)?.label ?? c} class={c === "id" ? "id" : undefined}>
          {i === 0 ? <a href={href({ page: "item", kind: kind.kind, path })}>{show(fields.get(c), item[c]) === "—" ? name : show(fields.get(c), item[c])}</a> : show(fields.get(c), item[c])}
        </td>
      ))}
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
    </tr>
  );
}

type TableProps = { kind: ConsoleKind; uid: string; items: Item[] | undefined; shown: Item[]; parentPath?: string; writes: boolean; onDelete: (d: { name: string; path: string }) => void };

/** The items shown (those of the page matching the name filter), or why there is none. */
function ListTable({ kind, uid, items, shown, parentPath, writes, onDelete }: TableProps) {
  const fields = new Map(kind.fields.map((f) => [f.name, f]));
  return (
    <section class="table-wrap" tabindex={0} aria-labelledby={`${uid}-title`}>
      <table>
        <thead>
          <tr>
            {kind.columns.map((c) => (
              <th key={c} scope="col">
                {fields.get(c)?.label ?? c}
              </th>
            ))}
            <th scope="col">
              <span class="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {shown.length === 0 && (
            <tr>
              <td colSpan={kind.columns.length + 1}>{items && items.length > 0 ? "No item on this page matches the name." : `No ${inSentence(kind.plural)}.`}</td>
            </tr>
          )}
          {shown.map((item) => (
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

export function ListView({ kind, who, parentPath, heading }: { kind: ConsoleKind; who: Identity; parentPath?: string; heading?: RefObject<HTMLHeadingElement | null> }) {
  const [values, setValues] = useState<Record<string, string>>({});
  const [nameFilter, setNameFilter] = useState("");
  // Markers of the pages before the one shown (paging back), and the shown one's.
  const [markers, setMarkers] = useState<(string | undefined)[]>([undefined]);
  const [deleting, setDeleting] = useState<{ name: string; path: string } | undefined>();
  // A new tenant filter lists from the first page.
  const { tenantInput, setTenantInput, tenant } = useTenantFilter(() => setMarkers([undefined]));
  const target = fillPath(kind.listTemplates, parentPath, values);
  const { items, next, error, load } = useListPage(kind, parentPath, target.path, markers.at(-1), tenant);
  const uid = `${kind.kind.replace(/\W/g, "-")}-${parentPath ? "child" : "top"}`;

  const shown = useMemo(() => {
    const f = nameFilter.trim().toLowerCase();
    if (!items || !f || !kind.nameField) return items;
    return items.filter((i) => String(i[kind.nameField!] ?? "").toLowerCase().includes(f));
  }, [items, nameFilter, kind]);

  return (
    <div class="list">
      <ListHead kind={kind} uid={uid} who={who} parentPath={parentPath} heading={heading} />
      <ListFilters
        kind={kind}
        who={who}
        missing={target.missing}
        values={values}
        onValues={setValues}
        tenantInput={tenantInput}
        onTenant={setTenantInput}
        nameFilter={nameFilter}
        onName={setNameFilter}
      />
      {target.missing.length > 0 && <p>Give the {listing(target.missing.map(fieldLabel))} to list them.</p>}
      <ErrorNote error={error} />
      {shown && target.path && <ListTable kind={kind} uid={uid} items={items} shown={shown} parentPath={parentPath} writes={canWrite(who)} onDelete={setDeleting} />}
      {kind.listQuery.includes("limit") && (markers.length > 1 || next) && <Pager kind={kind} markers={markers} next={next} onMarkers={setMarkers} />}
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
