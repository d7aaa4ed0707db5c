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

export function ListView({ kind, who, parentPath, heading }: { kind: ConsoleKind; who: Identity; parentPath?: string; heading?: RefObject<HTMLHeadingElement | null> }) {
  const [values, setValues] = useState<Record<string, string>>({});
  const [tenantInput, setTenantInput] = useState("");
  const [tenant, setTenant] = useState("");
  const [nameFilter, setNameFilter] = useState("");
  // Markers of the pages before the one shown (paging back), and the shown one's.
  const [markers, setMarkers] = useState<(string | undefined)[]>([undefined]);
  // biome-ignore lint/suspicious/noExplicitAny: items of any kind
  const [items, setItems] = useState<any[] | undefined>();
  const [next, setNext] = useState<string | undefined>();
  const [error, setError] = useState<unknown>();
  const [deleting, setDeleting] = useState<{ name: string; path: string } | undefined>();
  const target = fillPath(kind.listTemplates, parentPath, values);
  const paged = kind.listQuery.includes("limit");
  const marker = markers.at(-1);
  const uid = `${kind.kind.replace(/\W/g, "-")}-${parentPath ? "child" : "top"}`;

  // Answers may arrive out of order (a page asked for, a change meanwhile): only the last asked counts.
  const asked = useRef(0);
  const load = useCallback(async () => {
    if (!target.path) return;
    const n = ++asked.current;
    const q = new URLSearchParams();
    if (paged) q.set("limit", String(PAGE_SIZE));
    if (marker) q.set("marker", marker);
    if (tenant.trim() && kind.listQuery.includes("tenant_id")) q.set("tenant_id", tenant.trim());
    try {
      const a = await call("GET", `${target.path}${q.size ? `?${q}` : ""}`);
      if (n !== asked.current) return;
      setItems(Array.isArray(a.body) ? a.body : []);
      setNext(nextMarker(a.headers.get("link")));
      setError(undefined);
    } catch (err) {
      if (n !== asked.current) return;
      setError(err);
      setItems([]);
    }
  }, [target.path, marker, tenant, paged, kind]);

  useEffect(() => {
    void load();
  }, [load]);

  // The tenant filter applies once typing pauses, from the first page.
  useEffect(() => {
    if (tenantInput === tenant) return;
    const t = setTimeout(() => {
      setTenant(tenantInput);
      setMarkers([undefined]);
    }, 300);
    return () => clearTimeout(t);
  }, [tenantInput]);

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

  const shown = useMemo(() => {
    const f = nameFilter.trim().toLowerCase();
    if (!items || !f || !kind.nameField) return items;
    return items.filter((i) => String(i[kind.nameField!] ?? "").toLowerCase().includes(f));
  }, [items, nameFilter, kind]);

  const fields = new Map(kind.fields.map((f) => [f.name, f]));
  const writes = canWrite(who);
  const newHref = href({ page: "new", kind: kind.kind, parent: parentPath });

  return (
    <div class="list">
      <div class="list-head">
        {heading ? (
          <h1 id={`${uid}-title`} tabindex={-1} ref={heading}>
            {kind.plural}
          </h1>
        ) : (
          <h2 id={`${uid}-title`}>{kind.plural}</h2>
        )}
        {writes && kind.createTemplates.length > 0 && (
          <a class="button" href={newHref}>
            New {inSentence(kind.singular)}
          </a>
        )}
      </div>
      <form class="filters" onSubmit={(e) => e.preventDefault()} aria-label={`Filter ${inSentence(kind.plural)}`}>
        {target.missing.map((v) => (
          <label key={v}>
            {fieldLabel(v)}
            <input value={values[v] ?? ""} onChange={(e) => setValues({ ...values, [v]: e.currentTarget.value })} required />
          </label>
        ))}
        {who.role === "admin" && kind.listQuery.includes("tenant_id") && (
          <label>
            Tenant
            <input
              value={tenantInput}
              onInput={(e) => setTenantInput(e.currentTarget.value)}
              placeholder="any"
            />
          </label>
        )}
        {kind.nameField && (
          <label>
            Name contains
            <input type="search" value={nameFilter} onInput={(e) => setNameFilter(e.currentTarget.value)} />
          </label>
        )}
      </form>
      {target.missing.length > 0 && <p>Give the {listing(target.missing.map(fieldLabel))} to list them.</p>}
      <ErrorNote error={error} />
      {shown && target.path && (
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
              {shown.map((item) => {
                const path = itemPath(kind, item, parentPath);
                const name = itemName(kind, item, path);
                return (
                  <tr key={path}>
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
                        <button type="button" class="link danger" aria-label={`Delete ${name}`} onClick={() => setDeleting({ name, path })}>
                          Delete
                        </button>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </section>
      )}
      {paged && (markers.length > 1 || next) && (
        <nav class="pager" aria-label={`${kind.plural} pages`}>
          <button type="button" disabled={markers.length <= 1} onClick={() => setMarkers(markers.slice(0, -1))}>
            Previous page
          </button>
          <span>Page {markers.length}</span>
          <button type="button" disabled={!next} onClick={() => setMarkers([...markers, next])}>
            Next page
          </button>
        </nav>
      )}
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

