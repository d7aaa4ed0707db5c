// The change feed (/events, Server-Sent Events read with eventsource-parser): `vnm events` prints
// each change; `vnm <kind> list --watch` prints the list, then each change of that kind. When the
// connection drops, both reconnect after a second with Last-Event-ID, so nothing is missed.
import { createParser } from "eventsource-parser";
import { type Api, itemsOf, objectOf } from "./client.ts";
import { CliError } from "./errors.ts";
import { toJson } from "./json.ts";
import { printTemplate } from "./jsonpath.ts";
import type { Kind } from "./kinds.ts";
import { cell, columnsOf, type Format, fit, lines, TABLE_WIDTH } from "./output.ts";
import { clean, escapeJson, say, toYaml } from "./text.ts";
import { isRecord } from "@vnm/kit/values";

export interface Change {
  id: string;
  event: string;
  /** The notification as the gateway sent it: each member checked where it is read. */
  data: { kind?: unknown; id?: unknown; uri?: unknown };
}

/** Opens the stream after `last`; the caller reads it with `read`. */
function open(api: Api, last: string | undefined): Promise<Response> {
  const headers: Record<string, string> = { accept: "text/event-stream" };
  if (last) headers["last-event-id"] = last;
  return api.fetch("GET", "/events", { headers });
}

/** Hands each change of one connection to `each`, in order; returns the last event id seen. */
async function read(res: Response, last: string | undefined, each: (c: Change) => Promise<void>): Promise<string | undefined> {
  const pending: Change[] = [];
  const parser = createParser({
    onEvent(e) {
      let data: unknown;
      try {
        data = JSON.parse(e.data);
      } catch {
        return;
      }
      if (!isRecord(data)) return;
      pending.push({ id: e.id ?? "", event: e.event ?? "message", data });
    },
  });
  const decoder = new TextDecoder();
  try {
    for await (const chunk of res.body ?? []) {
      parser.feed(decoder.decode(chunk, { stream: true }));
      for (const c of pending.splice(0)) {
        await each(c);
        if (c.id) last = c.id;
      }
    }
  } catch {
    /* the connection broke: the caller resumes after the last event */
  }
  return last;
}

/**
 * Follows the feed for ever, each connection from where the last one ended. The first must
 * open (an unreachable gateway is exit 3); a lost one is said once, then tried every second.
 */
async function follow(api: Api, first: Response | undefined, from: string | undefined, each: (c: Change) => Promise<void>): Promise<never> {
  let last = from;
  let res: Response | undefined = first ?? (await open(api, last));
  for (;;) {
    if (res) {
      last = await read(res, last, each);
      say(`connection to ${api.url} lost; resuming${last ? ` after event ${last}` : ""}\n`);
    }
    await new Promise((r) => setTimeout(r, 1_000));
    try {
      res = await open(api, last);
    } catch (err) {
      // 410: the feed cannot resume after that event (the gateway restarted without NATS, or
      // the events were dropped): follow from now on, and say that changes may have been missed.
      if (err instanceof CliError && err.status === 410) {
        say(`the feed cannot resume after event ${last}; following from now (list again to see what changed meanwhile)\n`);
        last = undefined;
        res = undefined;
        continue;
      }
      // A refusal (401, 400) will not get better by retrying; a lost gateway may.
      if (!(err instanceof CliError) || err.exitCode !== 3) throw err;
      res = undefined;
    }
  }
}

/** A link's path at the gateway the CLI talks to (the token goes nowhere else). */
const sameGateway = (api: Api, uri: string) => (uri.startsWith(`${api.url}/`) ? uri : new URL(uri, api.url).pathname);

/** `vnm events`: one line per change. */
export function followEvents(api: Api, from?: string): Promise<never> {
  return follow(api, undefined, from, async (c) => {
    process.stdout.write(`${clean(c.id)}\t${clean(c.event)}\t${clean(String(c.data.kind))}\t${clean(String(c.data.id))}\t${clean(String(c.data.uri))}\n`);
  });
}

/** `vnm <kind> list --watch`: the list, then its kind's changes (within the list's parents and tenant). */
export async function watchList(api: Api, kind: Kind, listPath: string, format: Format, tenant?: string): Promise<never> {
  // The feed first, so no change between the list and the stream goes unseen.
  const stream = await open(api, undefined);
  const items = itemsOf(await api.call("GET", listPath));
  const scope = kind.valuesOf({ uri: `${api.url}${listPath.replace(/\?.*$/, "")}/x` });
  delete scope[kind.key];
  const tenantField = kind.info.resource.tenantField;
  const known = new Set(items.map((i) => kind.keyOf(i)));
  const columns = format.type === "table" || format.type === "wide" || format.type === "custom" ? columnsOf(kind, format) : [];
  const header = ["EVENT", ...columns.map((c) => clean(c.header))];
  const rowOf = (event: string, item: Record<string, unknown>) => [event, ...columns.map((c) => cell(c.value(item)))];
  const widths = fit(
    [header.map((h, j) => (j > 0 && h === "ID" ? "x".repeat(36) : h.padEnd(12))), ...items.map((i) => rowOf("listed", i))],
    format.type === "wide" ? undefined : TABLE_WIDTH,
  );
  const print = (event: string, item: Record<string, unknown>) => {
    if (format.type === "json") process.stdout.write(`${escapeJson(toJson({ type: event, object: item }))}\n`);
    else if (format.type === "yaml") process.stdout.write(`---\n${toYaml({ type: event, object: item })}\n`);
    else if (format.type === "name") process.stdout.write(`${kind.command}/${clean(kind.keyOf(item))} ${event}\n`);
    else if (format.type === "jsonpath") process.stdout.write(`${printTemplate(format.template, item)}\n`);
    else process.stdout.write(`${lines([rowOf(event, item)], widths).join("\n")}\n`);
  };
  if (columns.length) process.stdout.write(`${lines([header], widths).join("\n")}\n`);
  for (const i of items) print("listed", i);
  return follow(api, stream, undefined, async (c) => {
    if (c.data.kind !== kind.eventName || typeof c.data.uri !== "string") return;
    const values = kind.valuesOf({ uri: c.data.uri });
    if (Object.entries(scope).some(([v, x]) => values[v] !== undefined && values[v] !== x)) return;
    const key = values[kind.key] ?? String(c.data.id);
    if (c.event === "deleted") {
      if (!known.delete(key)) return;
      print("deleted", { id: c.data.id, uri: c.data.uri });
      return;
    }
    let item: Record<string, unknown>;
    try {
      item = objectOf(await api.call("GET", sameGateway(api, c.data.uri)));
    } catch (err) {
      if (err instanceof CliError && err.status === 404) return; // gone again meanwhile
      throw err;
    }
    if (tenant && tenantField && item[tenantField] !== tenant) return;
    known.add(key);
    print(c.event, item);
  });
}
