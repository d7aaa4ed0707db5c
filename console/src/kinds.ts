// The catalog as the pages use it: kinds by name, who may see them, and the paths of their
// lists, items and creates filled in from a parent's path.
import catalog from "virtual:vnm-catalog";
import type { Identity } from "./api.ts";
import type { ConsoleKind } from "./model.ts";

export const KINDS = new Map(catalog.kinds.map((k) => [k.kind, k]));
export const GROUPS = catalog.groups;

export function kindOf(name: string): ConsoleKind | undefined {
  return KINDS.get(name);
}

/** Kinds a caller may use at all: administrators every one, others those with a tenant. */
export function visibleTo(k: ConsoleKind, who: Identity): boolean {
  return who.role === "admin" || !k.adminOnly;
}

/** Tenant users only read. */
export function canWrite(who: Identity): boolean {
  return who.role !== "tenant_user";
}

const segments = (p: string) => p.split("/").slice(1);
const isVariable = (s: string) => /^\{\w+\}$/.test(s);

/**
 * The templates' path with variables taken by position from `parentPath` (the parent item's
 * path) and then from `values`; the first template whose every variable is known, else the one
 * with the fewest unknown variables, with those named.
 */
export function fillPath(templates: string[], parentPath: string | undefined, values: Record<string, string> = {}): { path?: string; missing: string[]; template?: string } {
  const parent = parentPath ? segments(parentPath) : [];
  let best: { path?: string; missing: string[]; template?: string } = { missing: [] };
  let bestMissing = Number.POSITIVE_INFINITY;
  for (const t of templates) {
    const segs = segments(t);
    // Under a parent, only templates that continue the parent's path.
    if (parent.length > 0 && (segs.length <= parent.length || segs.slice(0, parent.length).some((s, i) => !isVariable(s) && s !== parent[i]))) continue;
    const missing: string[] = [];
    const filled = segs.map((s, i) => {
      if (!isVariable(s)) return s;
      if (i < parent.length) return parent[i]!;
      const name = s.slice(1, -1);
      const v = values[name];
      if (v === undefined || v === "") missing.push(name);
      return encodeURIComponent(v ?? "");
    });
    if (missing.length < bestMissing) {
      bestMissing = missing.length;
      best = { path: missing.length === 0 ? `/${filled.join("/")}` : undefined, missing, template: t };
    }
  }
  return best;
}

/** An item's path: its `uri` link when it has one, else its item template filled from its fields and the parent's path. */
// biome-ignore lint/suspicious/noExplicitAny: an item of any kind
export function itemPath(k: ConsoleKind, item: any, parentPath?: string): string {
  if (typeof item?.uri === "string") return new URL(item.uri, location.href).pathname;
  const parent = parentPath ? segments(parentPath) : [];
  return `/${segments(k.itemTemplate)
    .map((s, i) => (isVariable(s) ? (i < parent.length ? parent[i]! : encodeURIComponent(String(item?.[s.slice(1, -1)] ?? ""))) : s))
    .join("/")}`;
}

/** The parent's path of an item path: the item template's segments above its own. */
export function parentPathOf(k: ConsoleKind, path: string): string | undefined {
  if (!k.parent) return undefined;
  const parent = KINDS.get(k.parent);
  if (!parent) return undefined;
  return `/${segments(path).slice(0, segments(parent.itemTemplate).length).join("/")}`;
}

/** What a person calls an item: its name, else its key. */
// biome-ignore lint/suspicious/noExplicitAny: an item of any kind
export function itemName(k: ConsoleKind, item: any, path: string): string {
  const name = k.nameField ? item?.[k.nameField] : undefined;
  if (typeof name === "string" && name !== "") return name;
  if (typeof item?.id === "string") return item.id;
  return decodeURIComponent(path.slice(path.lastIndexOf("/") + 1));
}
