// One item: its fields, edit and delete, the lists of its child kinds (a bridge's DHCP subnets,
// a subnet's hosts) and the other collections it links to (a VTEP's ports). It follows the
// change feed: when the item changes anywhere (a VTEP's connection state), it and those
// collections are read again; when it is deleted, the page says so.
import { useCallback, useEffect, useState } from "preact/hooks";
import { type Identity, call } from "./api.ts";
import { onChange } from "./events.ts";
import { canWrite, itemName, KINDS, parentPathOf, visibleTo } from "./kinds.ts";
import { ListView } from "./list.tsx";
import type { ConsoleKind, LinkedList } from "./model.ts";
import { kindOfPath, RefLink, refTarget } from "./refs.tsx";
import { go, href } from "./route.ts";
import { DeleteDialog, ErrorNote, Notice, show, usePage } from "./ui.tsx";
import { VTEP_KIND, VtepDetails } from "./vtep.tsx";
import { inSentence, phrase } from "./words.ts";

export function ItemPage({ kind, who, path }: { kind: ConsoleKind; who: Identity; path: string }) {
  // biome-ignore lint/suspicious/noExplicitAny: an item of any kind
  const [item, setItem] = useState<any>();
  const [error, setError] = useState<unknown>();
  const [gone, setGone] = useState(false);
  const [version, setVersion] = useState(0);
  const [deleting, setDeleting] = useState(false);
  const name = item ? itemName(kind, item, path) : "";
  const heading = usePage(item ? `${kind.singular} “${name}”` : kind.singular);

  const load = useCallback(async () => {
    try {
      setItem((await call("GET", path)).body);
      setError(undefined);
      setVersion((v) => v + 1);
    } catch (err) {
      setError(err);
    }
  }, [path]);
  useEffect(() => {
    setGone(false);
    void load();
  }, [load]);
  useEffect(
    () =>
      onChange((c) => {
        if (c.path !== path && c.event !== "resync") return;
        if (c.event === "deleted") setGone(true);
        else void load();
      }),
    [path, load],
  );

  const parentPath = parentPathOf(kind, path);
  const parentKind = kind.parent ? KINDS.get(kind.parent) : undefined;
  const shown = kind.fields.filter((f) => !f.writeOnly && !f.link);
  const writes = canWrite(who);
  return (
    <div class="item-page">
      <p class="crumbs">
        {parentKind && parentPath ? (
          <a href={href({ page: "item", kind: parentKind.kind, path: parentPath })}>← {parentKind.singular}</a>
        ) : (
          <a href={href({ page: "list", kind: kind.kind })}>← {kind.plural}</a>
        )}
      </p>
      <div class="list-head">
        <h1 tabindex={-1} ref={heading}>
          {kind.singular} <span class="item-name">{name}</span>
        </h1>
        {item && !gone && writes && (
          <div class="actions">
            {kind.canUpdate && (
              <a class="button" href={href({ page: "edit", kind: kind.kind, path })}>
                Edit
              </a>
            )}
            {kind.canDelete && (
              <button type="button" class="danger" onClick={() => setDeleting(true)}>
                Delete
              </button>
            )}
          </div>
        )}
      </div>
      {gone && <Notice>This {inSentence(kind.singular)} has been deleted.</Notice>}
      <ErrorNote error={error} />
      {item && (
        <dl class="fields">
          {shown.map((f) => (
            <div key={f.name}>
              <dt>{f.label}</dt>
              <dd>{refTarget(kind, f, item) ? <RefLink target={refTarget(kind, f, item)!} id={item[f.name]} /> : show(f, item[f.name])}</dd>
            </div>
          ))}
        </dl>
      )}
      {item && !gone && kind.kind === VTEP_KIND && <VtepDetails path={path} item={item} version={version} />}
      {item &&
        !gone &&
        kind.children
          .map((c) => KINDS.get(c))
          .filter((c): c is ConsoleKind => c !== undefined && visibleTo(c, who))
          .map((c) => <ListView key={c.kind} kind={c} who={who} parentPath={path} />)}
      {item && !gone && kind.linkedLists.map((l) => <LinkedTable key={l.template} list={l} path={path} version={version} />)}
      {deleting && (
        <DeleteDialog
          kind={kind}
          name={name}
          path={path}
          onClose={(done) => {
            setDeleting(false);
            if (done) go(parentKind && parentPath ? { page: "item", kind: parentKind.kind, path: parentPath } : { page: "list", kind: kind.kind });
          }}
        />
      )}
    </div>
  );
}

/**
 * A cell of a linked collection: an item of a kind (its `uri` says which) links its id to its
 * page, and each field naming another item to that item's (a port's peer and device), without
 * reading them (a table may hold many).
 */
// biome-ignore lint/suspicious/noExplicitAny: an item of any kind
function LinkedCell({ item, column }: { item: any; column: string }) {
  const k = typeof item?.uri === "string" ? kindOfPath(new URL(item.uri, location.href).pathname) : undefined;
  const f = k?.fields.find((x) => x.name === column);
  const value = item?.[column];
  if (k && f && typeof value === "string" && value !== "") {
    const target = f.name === k.key ? { kind: k, path: new URL(item.uri, location.href).pathname } : refTarget(k, f, item);
    if (target) return <a href={href({ page: "item", kind: target.kind.kind, path: target.path })}>{value}</a>;
  }
  return <>{show(f, value)}</>;
}

/** A collection the item links to that is no kind of its own: read only, read again with the item. */
function LinkedTable({ list, path, version }: { list: LinkedList; path: string; version: number }) {
  // biome-ignore lint/suspicious/noExplicitAny: items of any message
  const [items, setItems] = useState<any[] | undefined>();
  const [error, setError] = useState<unknown>();
  const url = `${path}/${list.template.slice(list.template.lastIndexOf("/") + 1)}`;
  useEffect(() => {
    call("GET", url).then(
      (a) => {
        setItems(Array.isArray(a.body) ? a.body : []);
        setError(undefined);
      },
      (err) => setError(err),
    );
  }, [url, version]);
  const columns = [...new Set((items ?? []).flatMap((i) => Object.keys(i)))].filter((c) => c !== "uri");
  const id = `linked-${list.template.replace(/\W/g, "-")}`;
  return (
    <div class="list">
      <h2 id={id}>{list.title}</h2>
      <ErrorNote error={error} />
      {items && items.length === 0 && <p>None.</p>}
      {items && items.length > 0 && (
        <section class="table-wrap" tabindex={0} aria-labelledby={id}>
          <table>
            <thead>
              <tr>
                {columns.map((c) => (
                  <th key={c} scope="col">
                    {phrase(c)}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {items.map((i, n) => (
                <tr key={n}>
                  {columns.map((c) => (
                    <td key={c} data-label={phrase(c)}>
                      <LinkedCell item={i} column={c} />
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      )}
    </div>
  );
}
