// One item: its fields, edit and delete, the lists of its child kinds (a bridge's DHCP subnets,
// a subnet's hosts) and the other collections it links to (a VTEP's ports). It follows the
// change feed: when the item changes anywhere (a VTEP's connection state), it and those
// collections are read again; when it is deleted, the page says so.
import { Fragment, type RefObject } from "preact";
import { useCallback, useEffect, useState } from "preact/hooks";
import { type Identity, call } from "./api.ts";
import { onChange } from "./events.ts";
import { canWrite, fillPath, itemName, KINDS, parentPathOf, visibleTo } from "./kinds.ts";
import { ListRow, ListView } from "./list.tsx";
import { RULE_KIND, RuleSummary, RulesTable } from "./rules.tsx";
import { YamlView } from "./yaml.tsx";
import type { ConsoleKind, LinkedList } from "./model.ts";
import { kindOfPath, RefLink, RefLinks, refTarget, refTargets } from "./refs.tsx";
import { go, href } from "./route.ts";
import { DeleteDialog, ErrorNote, Notice, show, usePage } from "./ui.tsx";
import { QUOTA_KIND, QuotaUsage } from "./quota.tsx";
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
  const writes = canWrite(who);
  return (
    <div class="item-page">
      <ItemHead kind={kind} path={path} name={name} heading={heading} actions={item !== undefined && !gone && writes} onDelete={() => setDeleting(true)} />
      {gone && <Notice>This {inSentence(kind.singular)} has been deleted.</Notice>}
      <ErrorNote error={error} />
      {!item && !error && (
        <p class="loading" role="status">
          Loading…
        </p>
      )}
      {item && kind.kind === RULE_KIND && <RuleSummary rule={item} />}
      {item && <ItemFields kind={kind} item={item} />}
      {item && !gone && <YamlView kind={kind} path={path} item={item} canEdit={writes} />}
      {item && !gone && kind.kind === VTEP_KIND && <VtepDetails path={path} item={item} version={version} />}
      {item && !gone && kind.kind === QUOTA_KIND && <QuotaUsage path={path} item={item} />}
      {item &&
        !gone &&
        kind.children
          .map((c) => KINDS.get(c))
          .filter((c): c is ConsoleKind => c !== undefined && visibleTo(c, who))
          .map((c) => <ListView key={c.kind} kind={c} who={who} parentPath={path} />)}
      {item &&
        !gone &&
        kind.linkedLists.map((l, n) => (
          <LinkedTable
            key={l.template}
            list={l}
            path={path}
            version={version}
            parentKind={kind}
            who={who}
            // One "New ..." per kind: a bridge's ports, not its peer and VXLAN ports again.
            offerNew={kind.linkedLists.findIndex((x) => x.kind === l.kind) === n}
          />
        ))}
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

/** The way back (to the parent, else the list), the item's kind and name, Edit and Delete. */
function ItemHead({ kind, path, name, heading, actions, onDelete }: { kind: ConsoleKind; path: string; name: string; heading: RefObject<HTMLHeadingElement | null>; actions: boolean; onDelete: () => void }) {
  const parentPath = parentPathOf(kind, path);
  const parentKind = kind.parent ? KINDS.get(kind.parent) : undefined;
  return (
    <>
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
        {actions && (
          <div class="actions">
            {kind.canUpdate && (
              <a class="button" href={href({ page: "edit", kind: kind.kind, path })}>
                Edit
              </a>
            )}
            {kind.canDelete && (
              <button type="button" class="danger" onClick={onDelete}>
                Delete
              </button>
            )}
          </div>
        )}
      </div>
    </>
  );
}

/** An item's fields, each other item it names a link by that item's name (a list of them, a list of links). */
// biome-ignore lint/suspicious/noExplicitAny: an item of any kind
function ItemFields({ kind, item }: { kind: ConsoleKind; item: any }) {
  const shown = kind.fields.filter((f) => !f.writeOnly && !f.link);
  const value = (f: (typeof shown)[number]) => {
    const one = refTarget(kind, f, item);
    if (one) return <RefLink target={one} id={item[f.name]} />;
    const many = refTargets(f, item);
    return many ? <RefLinks targets={many} /> : show(f, item[f.name]);
  };
  return (
    <dl class="fields">
      {shown.map((f) => (
        <div key={f.name}>
          <dt>{f.label}</dt>
          <dd>{value(f)}</dd>
        </div>
      ))}
    </dl>
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
  const many = k && f ? refTargets(f, item) : undefined;
  if (many && many.length > 0)
    return (
      <>
        {many.map((t, i) => (
          <Fragment key={t.id}>
            {i > 0 && ", "}
            <a href={href({ page: "item", kind: t.target.kind.kind, path: t.target.path })}>{t.id}</a>
          </Fragment>
        ))}
      </>
    );
  return <>{show(f, value)}</>;
}

/**
 * Where a new item of a linked collection's kind is made from this item's page: below it (a
 * bridge's port, a chain's rule), or with its field naming this item filled in (a load
 * balancer's pool: loadBalancerId). Undefined when neither.
 */
function newChild(k: ConsoleKind, parentKind: ConsoleKind, path: string) {
  if (k.createTemplates.length === 0) return undefined;
  if (fillPath(k.createTemplates, path).path) return href({ page: "new", kind: k.kind, parent: path });
  const f = k.fields.find((x) => x.ref === parentKind.kind && !x.readOnly);
  const id = decodeURIComponent(path.slice(path.lastIndexOf("/") + 1));
  return f ? href({ page: "new", kind: k.kind, query: new URLSearchParams({ [f.name]: id }).toString() }) : undefined;
}

/**
 * A collection the item links to, read again with the item. Items of a kind (a load balancer's
 * pools) show as that kind's list does: its columns, the first a link, ids as named links;
 * others, every member as text. A "New ..." link where a new one can be made from here.
 */
function LinkedTable({ list, path, version, parentKind, who, offerNew }: { list: LinkedList; path: string; version: number; parentKind: ConsoleKind; who: Identity; offerNew: boolean }) {
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
  const k = list.kind ? KINDS.get(list.kind) : undefined;
  const id = `linked-${list.template.replace(/\W/g, "-")}`;
  const create = k && offerNew && canWrite(who) ? newChild(k, parentKind, path) : undefined;
  if (k?.kind === RULE_KIND) return <RulesTable chainPath={path} title={list.title} who={who} />;
  const columns = k ? k.columns : [...new Set((items ?? []).flatMap((i) => Object.keys(i)))].filter((c) => c !== "uri");
  const fields = new Map((k?.fields ?? []).map((f) => [f.name, f]));
  return (
    <div class="list">
      <div class="list-head">
        <h2 id={id}>{list.title}</h2>
        {create && k && (
          <a class="button" href={create}>
            New {inSentence(k.singular)}
          </a>
        )}
      </div>
      <ErrorNote error={error} />
      {items && items.length === 0 && <p>None.</p>}
      {items && items.length > 0 && (
        <section class="table-wrap" tabindex={0} aria-labelledby={id}>
          <table>
            <thead>
              <tr>
                {columns.map((c) => (
                  <th key={c} scope="col">
                    {fields.get(c)?.label ?? phrase(c)}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {items.map((i, n) =>
                k ? (
                  <ListRow key={n} kind={k} item={i} writes={false} />
                ) : (
                  <tr key={n}>
                    {columns.map((c) => (
                      <td key={c} data-label={phrase(c)}>
                        <LinkedCell item={i} column={c} />
                      </td>
                    ))}
                  </tr>
                ),
              )}
            </tbody>
          </table>
        </section>
      )}
    </div>
  );
}
