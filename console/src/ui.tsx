// Small pieces every page uses: page titles and focus, values as text, errors, the delete dialog.
import type { ComponentChildren, RefObject } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError, call, OfflineError } from "./api.ts";
import { KINDS } from "./kinds.ts";
import type { ConsoleField, ConsoleKind } from "./model.ts";
import { inSentence, plainWords } from "./words.ts";

/** Sets the document's title, and moves focus to the page's heading when it opens (for keyboards and screen readers). */
export function usePage(title: string): RefObject<HTMLHeadingElement | null> {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${title} · vnm console`;
  }, [title]);
  // Once per page (not when its title follows a change of the item).
  useEffect(() => {
    heading.current?.focus();
  }, []);
  return heading;
}

/** A value as one line of text (never markup: Preact writes text nodes). */
export function show(f: ConsoleField | undefined, v: unknown): string {
  if (v === null || v === undefined || v === "") return "—";
  if (typeof v === "boolean" || f?.type === "boolean") return v === true ? "yes" : v === false ? "no" : String(v);
  if (Array.isArray(v)) return v.length === 0 ? "—" : v.map((x) => (typeof x === "object" ? JSON.stringify(x) : String(x))).join(", ");
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}

/** An error as a person reads it: the API's message in plain words, the status only where it tells something. */
export function errorText(error: unknown): string {
  if (error instanceof OfflineError) return "The gateway does not answer: check that it runs, then try again.";
  if (error instanceof ApiError) {
    if (error.violations.length > 0) return "Some values were not accepted: see the fields marked below.";
    if (error.status === 403) return `You may not do this: ${plainWords(error.message)}`;
    if (error.status >= 500) return `A service behind the gateway is unavailable (${error.status}): ${plainWords(error.message)}. Try again shortly.`;
    return plainWords(error.message);
  }
  return error instanceof Error ? error.message : String(error);
}

export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  const text = errorText(error);
  return (
    <p class="error" role="alert">
      {text}
    </p>
  );
}

/** "A, B and C". */
export function listing(words: string[]): string {
  return words.length <= 1 ? (words[0] ?? "") : `${words.slice(0, -1).join(", ")} and ${words.at(-1)}`;
}

/** The confirmation of a delete, naming what goes with the item (its kind's cascades). */
export function DeleteDialog({ kind, name, path, onClose }: { kind: ConsoleKind; name: string; path: string; onClose: (deleted: boolean) => void }) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    dialog.current?.showModal();
  }, []);
  const goes = kind.cascades.map((c) => inSentence(KINDS.get(c)?.plural ?? c));
  const confirm = async () => {
    setBusy(true);
    try {
      await call("DELETE", path);
      toast(`${kind.singular} “${name}” deleted.`);
      onClose(true);
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  };
  return (
    <dialog ref={dialog} class="confirm" aria-labelledby="delete-title" onCancel={() => onClose(false)}>
      <h2 id="delete-title">
        Delete {inSentence(kind.singular)} “{name}”?
      </h2>
      {goes.length > 0 ? (
        <p>All its {listing(goes)} are deleted with it. This cannot be undone.</p>
      ) : (
        <p>This cannot be undone.</p>
      )}
      <ErrorNote error={error} />
      <div class="actions">
        <button type="button" class="danger" onClick={confirm} disabled={busy}>
          Delete
        </button>
        <button type="button" onClick={() => onClose(false)} autofocus>
          Cancel
        </button>
      </div>
    </dialog>
  );
}

export function Notice({ children }: { children: ComponentChildren }) {
  return (
    <p class="notice" role="status">
      {children}
    </p>
  );
}

type Toast = { id: number; text: string };
let toasts: Toast[] = [];
let toastId = 0;
const toastListeners = new Set<(t: Toast[]) => void>();

/** A short confirmation (created, saved, deleted), shown for 5 s in the page's corner and read out by screen readers. */
export function toast(text: string): void {
  const t = { id: ++toastId, text };
  toasts = [...toasts, t];
  for (const l of toastListeners) l(toasts);
  setTimeout(() => {
    toasts = toasts.filter((x) => x !== t);
    for (const l of toastListeners) l(toasts);
  }, 5_000);
}

export function Toasts() {
  const [shown, setShown] = useState(toasts);
  useEffect(() => {
    toastListeners.add(setShown);
    return () => void toastListeners.delete(setShown);
  }, []);
  return (
    <div class="toasts" role="status" aria-live="polite">
      {shown.map((t) => (
        <p key={t.id} class="toast">
          {t.text}
        </p>
      ))}
    </div>
  );
}
