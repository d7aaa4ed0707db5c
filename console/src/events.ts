// The change feed (GET /events) read with fetch, since EventSource cannot send the token header;
// eventsource-parser splits the stream. One stream per tab, shared by every open page; when it
// ends or breaks it reconnects after the server's retry delay with Last-Event-ID, so no change is
// missed while it was away (with no event received yet, the pages read what they show again).
import { createParser } from "eventsource-parser";
import { currentToken, endSession, SESSION_ENDED } from "./api.ts";
import { stringMember } from "@vnm/kit/values";

/** The events of the feed's notifications. */
const CHANGE_EVENTS: readonly Change["event"][] = ["created", "updated", "deleted"];

export interface Change {
  /** "resync": the feed was away and cannot replay what it missed; whatever is shown is read again. */
  event: "created" | "updated" | "deleted" | "resync";
  /** The media type name ("Bridge"). */
  kind: string;
  id: string;
  /** The item's path on this gateway. */
  path: string;
}

type Listener = (c: Change) => void;

const listeners = new Set<Listener>();
let running: AbortController | undefined;
let lastId: string | undefined;
let retryMs = 2_000;
/** Attempts in a row that did not get a stream: each waits twice as long as the last (to 30 s), so a gateway that is down is not hammered. */
let failures = 0;
const MAX_WAIT_MS = 30_000;
/** Whether a stream was open before (a reconnection, not the first connection). */
let connectedBefore = false;
let state: "live" | "connecting" | "off" = "off";
const stateListeners = new Set<(s: typeof state) => void>();

function setState(s: typeof state): void {
  state = s;
  for (const l of stateListeners) l(s);
}

export function feedState(): typeof state {
  return state;
}

export function onFeedState(l: (s: typeof state) => void): () => void {
  stateListeners.add(l);
  return () => stateListeners.delete(l);
}

async function readOnce(signal: AbortSignal): Promise<void> {
  const token = currentToken();
  if (!token) throw new Error("not logged in");
  const headers: Record<string, string> = { accept: "text/event-stream", "x-auth-token": token };
  if (lastId) headers["last-event-id"] = lastId;
  const res = await fetch("/events", { headers, signal, credentials: "omit", cache: "no-store" });
  // 410: the feed cannot resume after that event (a restart, or too long away): follow from now
  // on, and the pages read what they show again.
  if (res.status === 410) {
    lastId = undefined;
    throw new Error("the change feed cannot resume where it was; reading again");
  }
  if (res.status === 401) endSession(SESSION_ENDED);
  if (!res.ok || !res.body) throw new Error(`the change feed answered ${res.status}`);
  setState("live");
  failures = 0;
  // Back without an event id to resume after: what happened meanwhile is read afresh instead.
  if (connectedBefore && !lastId) for (const l of listeners) l({ event: "resync", kind: "", id: "", path: "" });
  connectedBefore = true;
  const parser = createParser({
    onEvent(e) {
      if (e.id) lastId = e.id;
      if (!e.data) return;
      try {
        const d: unknown = JSON.parse(e.data);
        const event = CHANGE_EVENTS.find((x) => x === e.event);
        const [kind, id, uri] = [stringMember(d, "kind"), stringMember(d, "id"), stringMember(d, "uri")];
        if (!event || kind === undefined || id === undefined || uri === undefined) return;
        const change: Change = { event, kind, id, path: new URL(uri, location.href).pathname };
        for (const l of listeners) l(change);
      } catch {
        // not a change: ignored
      }
    },
    onRetry(ms) {
      retryMs = ms;
    },
  });
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    parser.feed(value);
  }
}

async function run(ac: AbortController): Promise<void> {
  while (!ac.signal.aborted) {
    setState("connecting");
    await readOnce(ac.signal).catch(() => {
      failures++;
    });
    if (ac.signal.aborted || !currentToken()) break;
    setState("connecting");
    // A stream that ended after being live comes back after the server's delay; failures back off, with some jitter.
    // (The server's delay may be short, a gateway stopping says come back soon: failures start from 2 s at least.)
    const wait = failures === 0 ? retryMs : Math.min(MAX_WAIT_MS, Math.max(2_000, retryMs) * 2 ** (failures - 1)) * (0.8 + Math.random() * 0.4);
    await new Promise((r) => setTimeout(r, wait));
  }
  if (running === ac) setState("off");
}

/** Starts following the feed (once per tab); stop() ends it (on logout). */
export function startFeed(): void {
  if (running) return;
  running = new AbortController();
  void run(running);
}

export function stopFeed(): void {
  running?.abort();
  running = undefined;
  lastId = undefined;
  connectedBefore = false;
  failures = 0;
  setState("off");
}

export function onChange(l: Listener): () => void {
  listeners.add(l);
  return () => listeners.delete(l);
}
