// Path templates, in one place: the HTTP bindings' route templates ("/bridges/{bridgeId}/dhcp")
// and the link templates of resource fields ("/bridges/{bridgeId}/dhcp/{subnetPrefix}_{subnetLength}").
// The catalog parses the first, the gateway matches requests against them, and the gateway and
// the services resolve the second against a message (links in bodies, paths in notifications).
import type { MessageInfo } from "./catalog.ts";

export type Segment = { literal: string } | { variable: string };

/** Splits a route template into literal and variable segments; one variable per segment. */
export function parseTemplate(template: string): Segment[] {
  if (!template.startsWith("/")) throw new Error(`HTTP path must start with '/': ${template}`);
  return template
    .slice(1)
    .split("/")
    .map((s) => {
      const m = /^\{([A-Za-z_][A-Za-z0-9_]*)\}$/.exec(s);
      if (m) return { variable: m[1]! };
      if (s.includes("{")) throw new Error(`unsupported path segment ${s} in ${template}`);
      return { literal: s };
    });
}

/**
 * A template with its variables blanked: "/bridges/{}/dhcp". A segment holding any placeholder
 * ("{subnetPrefix}_{subnetLength}") is one variable segment, so route and link templates compare.
 */
export function templateShape(template: string): string {
  return template.replace(/[^/]*\{[^/]*/g, "{}");
}

/** The path variables of `parts` under a template's segments, or undefined when they do not fit. */
export function bind(segments: Segment[], parts: readonly string[]): Record<string, string> | undefined {
  if (segments.length !== parts.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < parts.length; i++) {
    const seg = segments[i]!;
    if ("literal" in seg) {
      if (seg.literal !== parts[i]) return undefined;
    } else params[seg.variable] = parts[i]!;
  }
  return params;
}

/** [their variable, my variable] for each path variable two templates have at the same position. */
export function sharedVariables(theirs: Segment[], mine: Segment[]): [string, string][] {
  const out: [string, string][] = [];
  theirs.forEach((s, i) => {
    const m = mine[i];
    if ("variable" in s && m && "variable" in m) out.push([s.variable, m.variable]);
  });
  return out;
}

/** {name} is one path segment; {+name} (RFC 6570 reserved expansion) may hold several. */
const PLACEHOLDER = /\{(\+?)([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** The field names a link template refers to. */
export function linkFields(template: string): string[] {
  return [...template.matchAll(PLACEHOLDER)].map((m) => m[2]!);
}

/** What a path segment keeps as it is (ids, addresses, MACs); the rest is percent-encoded. */
const UNSAFE = /[^A-Za-z0-9\-._~:@!$&'()*+,;=]/u;
const UNSAFE_ALL = new RegExp(UNSAFE.source, "gu");

/** A value as a path segment: most are ids and go as they are (one test, no copy). */
function pathValue(v: string): string {
  // By code point ("u"): a character outside the BMP is one match, encoded whole.
  return UNSAFE.test(v) ? v.replace(UNSAFE_ALL, encodeURIComponent) : v;
}

/** Resolves link templates of one message against an object: each a URL, or null. */
export type Links = (obj: Record<string, unknown>, base: string) => (string | null)[];
const compiled = new WeakMap<MessageInfo, Map<string, Links>>();

/**
 * Link templates of one message, split once into literal pieces and references to the fields
 * they read. A field several templates read (a bridge's id, in twelve links) is escaped once
 * per object. Placeholders naming no field of the message stay as written.
 */
export function compileLinks(msg: MessageInfo, templates: string[]): Links {
  const refs: { name: string; reserved: boolean }[] = [];
  const plans = templates.map((template) => {
    const pieces: (string | number)[] = [];
    let last = 0;
    for (const m of template.matchAll(PLACEHOLDER)) {
      if (!msg.byName.has(m[2]!)) continue;
      const ref = { name: m[2]!, reserved: m[1] === "+" };
      let k = refs.findIndex((r) => r.name === ref.name && r.reserved === ref.reserved);
      if (k < 0) k = refs.push(ref) - 1;
      pieces.push(template.slice(last, m.index), k);
      last = m.index + m[0].length;
    }
    pieces.push(template.slice(last));
    return pieces;
  });
  return (obj, base) => {
    const values = refs.map(({ name, reserved }) => {
      const v = obj[name];
      if (v === undefined || v === null || v === "") return null;
      return reserved ? String(v).split("/").map(pathValue).join("/") : pathValue(String(v));
    });
    return plans.map((pieces) => {
      let out = base;
      for (const p of pieces) {
        if (typeof p === "string") out += p;
        else {
          const v = values[p];
          if (v === null) return null;
          out += v;
        }
      }
      return out;
    });
  };
}

/**
 * Resolves a link template against an object; null when a referenced field is unset.
 * Placeholders naming no field of the message stay as written (URI templates for clients).
 */
export function resolveLink(msg: MessageInfo, template: string, obj: Record<string, unknown>, base: string): string | null {
  let byTemplate = compiled.get(msg);
  if (!byTemplate) {
    byTemplate = new Map();
    compiled.set(msg, byTemplate);
  }
  let links = byTemplate.get(template);
  if (!links) {
    links = compileLinks(msg, [template]);
    byTemplate.set(template, links);
  }
  return links(obj, base)[0]!;
}

/** Path of an item below the API root: its `uri` link, or <root path>/<id>. */
export function itemPath(msg: MessageInfo, obj: Record<string, unknown>): string | undefined {
  const uri = msg.byName.get("uri");
  if (uri?.link) return resolveLink(msg, uri.link, obj, "") ?? undefined;
  if (msg.resource?.rootPath && typeof obj["id"] === "string") return `${msg.resource.rootPath}/${obj["id"]}`;
  return undefined;
}
