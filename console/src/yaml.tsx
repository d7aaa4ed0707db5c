// An item as YAML (issue 55, as Headlamp has it): the whole representation the API answers, and,
// where the user may change it, an editor of the fields a PUT takes. Saving parses the text
// (a YAML error names its line), sends PUT with the If-Match of the item as it was when the
// editor opened, and says in plain words what the API refused: a violation by its field, a 412
// with the text kept (reload the item's YAML to see theirs). The yaml package (35 KB gzip) is its
// own chunk, loaded the first time a YAML disclosure opens.

type YamlLib = typeof import("yaml");
let loading: Promise<YamlLib> | undefined;
const loadYaml = () => {
  loading ??= import("yaml");
  return loading;
};
import { useState } from "preact/hooks";
import { ApiError, call, type Violation } from "./api.ts";
import type { ConsoleKind } from "./model.ts";
import { ErrorNote, toast } from "./ui.tsx";
import { fieldLabel, plainWords } from "./words.ts";

// biome-ignore lint/suspicious/noExplicitAny: an item of any kind
type Item = any;

/** The fields a PUT takes, as the item holds them (an edit's form: writable, not create-only, shown). */
function editable(kind: ConsoleKind, item: Item): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of kind.fields) if (!f.readOnly && !f.createOnly && !f.writeOnly && item?.[f.name] !== undefined) out[f.name] = item[f.name];
  return out;
}

export function YamlView({ kind, path, item, canEdit }: { kind: ConsoleKind; path: string; item: Item; canEdit: boolean }) {
  const [editing, setEditing] = useState<{ text: string; etag?: string } | undefined>();
  const [error, setError] = useState<unknown>();
  const [violations, setViolations] = useState<Violation[]>([]);
  const [busy, setBusy] = useState(false);
  const [lib, setLib] = useState<YamlLib | undefined>();
  const onToggle = (e: Event) => {
    if (e.currentTarget instanceof HTMLDetailsElement && e.currentTarget.open && !lib) loadYaml().then(setLib, setError);
  };
  const open = async () => {
    if (!lib) return;
    setError(undefined);
    setViolations([]);
    try {
      const a = await call("GET", path);
      setEditing({ text: lib.stringify(editable(kind, a.body)), etag: a.headers.get("etag") ?? undefined });
    } catch (err) {
      setError(err);
    }
  };
  const save = async () => {
    if (!editing || !lib) return;
    setError(undefined);
    setViolations([]);
    let body: unknown;
    try {
      body = lib.parse(editing.text);
    } catch (err) {
      setError(`The YAML does not parse: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    if (body === null || typeof body !== "object" || Array.isArray(body)) {
      setError("The YAML must be a mapping of field names to values.");
      return;
    }
    setBusy(true);
    try {
      await call("PUT", path, body, editing.etag ? { "if-match": editing.etag } : {});
      toast(`${kind.singular} saved from YAML.`);
      setEditing(undefined);
    } catch (err) {
      if (err instanceof ApiError && err.status === 412) setError("Someone else changed it since you opened the editor. Your text is kept: copy what you need, then Cancel and Edit YAML again.");
      else {
        setError(err);
        if (err instanceof ApiError) setViolations(err.violations);
      }
    }
    setBusy(false);
  };
  return (
    <details class="yaml" onToggle={onToggle}>
      <summary>YAML</summary>
      {!lib && !error && <p role="status">Loading…</p>}
      {lib && !editing && (
        <>
          <section class="table-wrap" tabindex={0} aria-label={`${kind.singular} as YAML`}>
            <pre class="yaml-text">{lib.stringify(item)}</pre>
          </section>
          {canEdit && kind.canUpdate && (
            <button type="button" onClick={() => void open()}>
              Edit YAML
            </button>
          )}
        </>
      )}
      {editing && (
        <div class="field yaml-field">
          <label for="yaml-edit">The fields a save sends, as YAML</label>
          <textarea id="yaml-edit" rows={Math.min(30, editing.text.split("\n").length + 2)} value={editing.text} spellcheck={false} onInput={(e) => setEditing({ ...editing, text: e.currentTarget.value })} />
        </div>
      )}
      <ErrorNote error={error} />
      {violations.length > 0 && (
        <ul class="error">
          {violations.map((v) => (
            <li key={v.property + v.message}>
              {fieldLabel(v.property)}: {plainWords(v.message)}
            </li>
          ))}
        </ul>
      )}
      {editing && (
        <div class="actions">
          <button type="button" class="primary" disabled={busy} onClick={() => void save()}>
            Save YAML
          </button>
          <button type="button" onClick={() => setEditing(undefined)}>
            Cancel
          </button>
        </div>
      )}
    </details>
  );
}
