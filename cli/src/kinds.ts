// What the CLI derives from the catalog for each kind: its command name, the options of its
// path's variables, its routes, its writable fields, the columns its table shows, and how an
// item names itself (the last segment of its `uri`). Nothing here names a kind.
import { type CliAction, type CliCatalog, type CliKind, type CliRoute, cliCatalog, type Field } from "./catalog.ts";
import { usage } from "./errors.ts";

/** "DhcpV6Subnet" -> "dhcp-v6-subnet". */
export const kebab = (s: string) => s.replace(/([a-z0-9])([A-Z])/g, "$1-$2").replace(/_/g, "-").toLowerCase();
export const camel = (s: string) => s.replace(/-([a-z0-9])/g, (_m, c: string) => c.toUpperCase());

/** A path variable's option: "bridgeId" -> --bridge, "subnetAddr" -> --subnet, "vlanId" -> --vlan. */
export const optionOf = (variable: string) => kebab(variable.replace(/(Id|Addr)$/, "") || variable);

/** The command name of a kind: its message name, kebab-case ("compat.CompatPool" -> compat-pool). */
export const commandOf = (k: Pick<CliKind, "message">) => kebab(k.message.name);

export const variables = (template: string) => [...template.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);

export type PathValues = Record<string, string | undefined>;

/** A kind with the routes of its verbs. */
export class Kind {
  readonly info: CliKind;
  readonly command: string;
  readonly list?: CliRoute;
  readonly get?: CliRoute;
  readonly create?: CliRoute;
  readonly update?: CliRoute;
  readonly delete?: CliRoute;
  /** The item's own path variable (the last one of its item path). */
  readonly key: string;
  /** Without a create of its own: the routes that create one under each kind of parent (a port's, on a router or a bridge). */
  readonly creates: CliRoute[];
  /** Its actions (a port's link and unlink), each with its route. */
  readonly actions: (CliAction & { route: CliRoute })[];

  constructor(info: CliKind, routes: CliRoute[]) {
    this.info = info;
    this.command = commandOf(info);
    const of = (rpc?: string) => routes.find((r) => r.service === info.service && r.rpc === rpc);
    this.list = of(info.rpcs.list);
    this.get = of(info.rpcs.get);
    this.create = of(info.rpcs.create);
    this.update = of(info.rpcs.update);
    this.delete = of(info.rpcs.delete);
    this.key = variables(info.itemTemplate).at(-1)!;
    this.creates = (info.creates ?? []).flatMap((rpc) => routes.filter((r) => r.service === info.service && r.rpc === rpc));
    this.actions = (info.actions ?? []).flatMap((a) => routes.filter((r) => r.service === info.service && r.rpc === a.rpc).map((route) => ({ ...a, route })));
  }

  get fields(): Field[] {
    return this.info.message.fields;
  }

  /** The name /events gives the kind: its media type without the version ("Bridge"). */
  get eventName(): string {
    return this.info.resource.mediaType.replace(/-v\d+$/, "");
  }

  has(field: string): boolean {
    return this.info.message.byName.has(field);
  }

  /**
   * The kind whose item a field holds the id of (a bridge's inboundFilterId: a chain; a list's
   * each element, inboundMirrorIds: a mirror), as the catalog says (the kit's references).
   */
  refOf(field: string): Kind | undefined {
    const ref = this.info.message.byName.get(field)?.ref;
    return ref ? allKinds().find((k) => k.info.kind === ref) : undefined;
  }

  /** The fields a create (or an update) may send. */
  writable(mode: "create" | "update"): Field[] {
    const names = new Set(this.info.writable[mode]);
    return this.fields.filter((f) => names.has(f.name));
  }

  /** The fields a table shows: everything but links; the default table only those that matter. */
  columns(wide: boolean): string[] {
    const shown = this.fields.filter((f) => !f.link && !f.internal && !f.behaviors.has("INPUT_ONLY") && f.name !== "password");
    if (wide) return shown.map((f) => f.name);
    const tenant = this.info.resource.tenantField;
    const matters = (f: Field) =>
      f.name === "id" ||
      f.name === "name" ||
      f.name === tenant ||
      (f.behaviors.has("REQUIRED") && !f.repeated && f.type !== "message") ||
      (f.type === "bool" && /admin|enabled/i.test(f.name)) ||
      /^(status|connection_?state)$/i.test(f.name);
    return shown.filter(matters).map((f) => f.name);
  }

  /** The path of a route with its variables filled in. */
  path(route: CliRoute | undefined, values: PathValues, verb: string): string {
    if (!route) throw usage(`${this.command} has no ${verb}`);
    return route.template.replace(/\{(\w+)\}/g, (_m, v: string) => {
      const value = values[v];
      if (value === undefined || value === "") throw usage(`--${optionOf(v)} is required`);
      return encodeURIComponent(value);
    });
  }

  /** The path variables of an item, read from its `uri` against the item path. */
  valuesOf(item: Record<string, unknown>): PathValues {
    const uri = typeof item["uri"] === "string" ? item["uri"] : undefined;
    if (!uri) return typeof item["id"] === "string" ? { [this.key]: item["id"] } : {};
    const names = variables(this.info.itemTemplate);
    const pattern = new RegExp(`${this.info.itemTemplate.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\\?\{\w+\\?\}/g, "([^/]+)")}$`);
    const m = pattern.exec(new URL(uri).pathname);
    if (!m) return { [this.key]: typeof item["id"] === "string" ? item["id"] : undefined };
    return Object.fromEntries(names.map((n, i) => [n, decodeURIComponent(m[i + 1]!)]));
  }

  /** How an item is named on the command line: its key (an id, a MAC, a subnet). */
  keyOf(item: Record<string, unknown>): string {
    return this.valuesOf(item)[this.key] ?? String(item["id"] ?? "");
  }

  /**
   * The path values of a route below this kind's item (a child's list): its variables where the
   * item's path has them, position by position ("/bridges/{id}" gives "/bridges/{bridgeId}/dhcp"
   * its bridgeId).
   */
  valuesBelow(item: Record<string, unknown>, template: string): PathValues | undefined {
    const mine = this.valuesOf(item);
    const own = this.info.itemTemplate.split("/");
    const below = template.split("/");
    const variable = (seg: string | undefined) => /^\{(\w+)\}$/.exec(seg ?? "")?.[1];
    const out: PathValues = {};
    for (const [i, seg] of own.entries()) {
      const a = variable(seg);
      const b = variable(below[i]);
      if (a && b) out[b] = mine[a];
      else if (a || b || seg !== below[i]) return undefined;
    }
    return out;
  }

  /** The options of the path variables above the item. */
  parents(route: CliRoute | undefined = this.list ?? this.get): string[] {
    return route ? variables(route.template).filter((v) => v !== this.key) : [];
  }
}

let kinds: Kind[] | undefined;

/** Every kind, by command name. */
export function allKinds(c: CliCatalog = cliCatalog()): Kind[] {
  kinds ??= c.kinds.map((k) => new Kind(k, c.routes)).sort((a, b) => a.command.localeCompare(b.command));
  return kinds;
}

/**
 * The kind whose item a path variable names: the variable closes another kind's item path
 * (routerId in /routers/{routerId}/ports: a router); else undefined. A field naming an item is
 * Kind.refOf's.
 */
export function kindNamedBy(template: string, variable: string): Kind | undefined {
  const at = template.indexOf(`{${variable}}`);
  if (at < 0) return undefined;
  const shape = (t: string) => t.replace(/\{\w+\}/g, "{}");
  const prefix = shape(template.slice(0, at + variable.length + 2));
  return allKinds().find((x) => shape(x.info.itemTemplate) === prefix);
}

/** A kind by its command name ("dhcp-host"), alias ("dhcp-hosts", "dh"), message name ("DhcpHost") or qualified kind ("bridge.DhcpHost"). */
export function kindNamed(name: string): Kind | undefined {
  return allKinds().find((k) => k.command === name || k.info.message.name === name || k.info.kind === name) ?? allKinds().find((k) => aliasesOf(k).includes(name));
}

/** English plural of a command name's last word: "bridge" -> "bridges", "qos-policy" -> "qos-policies", "addr" -> "addrs". */
export const pluralOf = (command: string) => (/[^aeiou]y$/.test(command) ? `${command.slice(0, -1)}ies` : /(s|x|z|ch|sh)$/.test(command) ? `${command}es` : `${command}s`);

/** The short name a kind would take: the initials of a name of several words (dhcp-subnet: ds), else its first two letters (bridge: br). */
const shortCandidate = (command: string) => {
  const words = command.split("-");
  return words.length > 1 ? words.map((w) => w[0]).join("") : command.slice(0, 2);
};

let aliases: Map<Kind, string[]> | undefined;

/**
 * Other names of a kind's command, kubectl-like: its plural, and a short name, derived from the
 * name (never a list of kinds). A short name two kinds would share, or that is another kind's
 * name or plural, is nobody's: such a kind has only its plural.
 */
export function aliasesOf(kind: Kind): string[] {
  if (!aliases) {
    const ks = allKinds();
    const taken = new Set(ks.flatMap((k) => [k.command, pluralOf(k.command)]));
    const counts = new Map<string, number>();
    for (const k of ks) counts.set(shortCandidate(k.command), (counts.get(shortCandidate(k.command)) ?? 0) + 1);
    aliases = new Map(
      ks.map((k) => {
        const short = shortCandidate(k.command);
        const plural = pluralOf(k.command);
        return [k, [...(plural !== k.command ? [plural] : []), ...(counts.get(short) === 1 && !taken.has(short) && short.length > 1 ? [short] : [])]];
      }),
    );
  }
  return aliases.get(kind) ?? [];
}
