// Media types: vendor names, Accept negotiation (RFC 9110 section 12.5.1) and Content-Type checks.
// The negotiation is our own, not negotiator's: on equal quality the earlier offer wins (the
// vendor type for "application/json, <vendor>"), a media range's parameters (charset) do not
// stop it matching, and an empty Accept means any type; negotiator does otherwise in all three.
import { LRUCache } from "lru-cache";

export const VENDOR_PREFIX = "application/vnd.org.service.";
export const JSON_TYPE = "application/json";
export const ERROR_TYPE = vendor("Error-v1");

export function vendor(name: string): string {
  return `${VENDOR_PREFIX}${name}+json`;
}

interface Range {
  type: string;
  subtype: string;
  q: number;
}

/** The Accept headers parsed last (a gateway sees the same few again and again). */
const parsedCache = new LRUCache<string, Range[]>({ max: 1000 });

/** Parses an Accept header into media ranges; unparsable members are skipped. */
export function parseAccept(header: string): Range[] {
  const cached = parsedCache.get(header);
  if (cached) return cached;
  const ranges: Range[] = [];
  for (const member of header.split(",")) {
    const [mt, ...params] = member.split(";");
    const m = /^\s*([!#$%&'*+\-.^_`|~0-9A-Za-z]+)\/([!#$%&'*+\-.^_`|~0-9A-Za-z]+)\s*$/.exec(mt ?? "");
    if (!m) continue;
    let q = 1;
    for (const p of params) {
      const pm = /^\s*q\s*=\s*([0-9.]+)\s*$/i.exec(p);
      if (pm) {
        const v = Number(pm[1]);
        q = Number.isFinite(v) ? Math.min(Math.max(v, 0), 1) : 0;
      }
    }
    ranges.push({ type: m[1]!.toLowerCase(), subtype: m[2]!.toLowerCase(), q });
  }
  parsedCache.set(header, ranges);
  return ranges;
}

/** q-value the ranges give an offer: the most specific matching range decides. */
function quality(ranges: Range[], offer: string): number {
  const [type = "", subtype = ""] = offer.toLowerCase().split("/");
  let best = -1;
  let q = 0;
  for (const r of ranges) {
    let specificity: number;
    if (r.type === type && r.subtype === subtype) specificity = 2;
    else if (r.type === type && r.subtype === "*") specificity = 1;
    else if (r.type === "*" && r.subtype === "*") specificity = 0;
    else continue;
    if (specificity > best) {
      best = specificity;
      q = r.q;
    }
  }
  return best < 0 ? 0 : q;
}

/**
 * Picks the offer the client accepts best; on equal quality the earlier offer wins, so the
 * vendor type is chosen unless the client asked for application/json alone. A missing
 * Accept means any type.
 */
export function negotiate(accept: string | undefined, offers: string[]): string | undefined {
  if (accept === undefined || accept.trim() === "") return offers[0];
  const ranges = parseAccept(accept);
  let chosen: string | undefined;
  let bestQ = 0;
  for (const offer of offers) {
    const q = quality(ranges, offer);
    if (q > bestQ) {
      bestQ = q;
      chosen = offer;
    }
  }
  return chosen;
}

/** The bare media type of a Content-Type header (parameters dropped), lower case. */
export function essence(contentType: string | undefined): string | undefined {
  if (!contentType) return undefined;
  const t = contentType.split(";")[0]!.trim().toLowerCase();
  return t === "" ? undefined : t;
}

const GZIP_CODING = /^\s*(gzip|x-gzip|\*)\s*(?:;\s*q\s*=\s*([0-9.]+)\s*)?$/i;

/** Whether an Accept-Encoding header lets the answer be gzip-coded (gzip or * with a q-value above 0, gzip's own value deciding). */
export function acceptsGzip(header: string | undefined): boolean {
  if (!header) return false;
  let gzip: number | undefined;
  let any: number | undefined;
  for (const member of header.split(",")) {
    const m = GZIP_CODING.exec(member);
    if (!m) continue;
    const q = m[2] === undefined ? 1 : Number(m[2]);
    if (m[1] === "*") any = q;
    else gzip = Math.max(gzip ?? 0, q);
  }
  return (gzip ?? any ?? 0) > 0;
}
