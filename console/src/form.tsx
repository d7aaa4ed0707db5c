// Create and edit forms from the catalog: a labelled input per field the API takes (create: every
// writable one; edit: not the create-only ones), its type, required mark, allowed values and the
// service's default. The API checks the values: its violations show beside the fields they name.
// An edit sends If-Match with the item's ETag; a 412 says someone else changed it and shows the
// current values. A kind whose service groups its fields (a rule: its type's own fields, its match
// conditions) gets them in titled sections, with only the chosen type's own fields shown.
import { useEffect, useState } from "preact/hooks";
import { ApiError, type Identity, call, type Violation } from "./api.ts";
import { fillPath, itemName, itemPath, KINDS, parentPathOf } from "./kinds.ts";
import type { ConsoleField, ConsoleKind } from "./model.ts";
import { RefListPicker, RefPicker } from "./refs.tsx";
import { go, href } from "./route.ts";
import { ErrorNote, listing, toast, usePage } from "./ui.tsx";
import { fieldLabel, inSentence, plainWords } from "./words.ts";

type Values = Record<string, string | boolean>;

/** A field's value as the form holds it. */
function toInput(f: ConsoleField, v: unknown): string | boolean {
  if (f.type === "boolean" && !f.repeated) return v === true;
  if (v === null || v === undefined) return "";
  if (f.type === "json") return JSON.stringify(v, null, 2);
  if (f.repeated && Array.isArray(v)) return v.map(String).join(", ");
  return String(v);
}

/** A form value as the API takes it; undefined leaves the field out. Mistyped values go as typed: the API names them. */
function fromInput(f: ConsoleField, v: string | boolean): unknown {
  if (typeof v === "boolean") return v;
  const text = v.trim();
  if (text === "") return f.repeated ? [] : undefined;
  if (f.type === "json") return JSON.parse(text);
  const one = (t: string): unknown => {
    if (f.type === "integer" || f.type === "number") return t !== "" && Number.isFinite(Number(t)) ? Number(t) : t;
    // 64-bit integers go as their digits (the gateway takes a digit string).
    if (f.type === "boolean") return t === "true" ? true : t === "false" ? false : t;
    return t;
  };
  return f.repeated ? text.split(",").map((t) => one(t.trim())).filter((t) => t !== "") : one(text);
}

/** The field a violation names ("extraDhcpOpts[0].optName" is extraDhcpOpts's). */
const fieldOfViolation = (p: string) => p.split(/[.[]/, 1)[0]!;

/** The fields a form takes: create, every writable one; edit, not the create-only ones. An optional id (the service gives one) comes last. */
function formFields(kind: ConsoleKind, editing: boolean): ConsoleField[] {
  return kind.fields
    .filter((f) => !f.readOnly && (!editing || !f.createOnly))
    .sort((a, b) => Number(a.name === "id" && !a.required) - Number(b.name === "id" && !b.required));
}

/** A part of a form: its fields, under a title unless it is the form's first. */
interface Section {
  title?: string;
  fields: ConsoleField[];
}

/**
 * The form's fields in sections, as the kind's service groups them: first the fields of no group,
 * then, for a kind whose fields depend on one field's value (a rule's type), the chosen value's
 * own fields (another value's are not shown, nor sent), then each declared group (a rule's match
 * conditions). `shown` is every field on the form.
 */
function sectionsOf(kind: ConsoleKind, fields: ConsoleField[], values: Values): { sections: Section[]; shown: ConsoleField[] } {
  const variants = kind.variants;
  const chosen = variants ? String(values[variants.field] ?? "") : "";
  const ofVariants = new Set(variants ? Object.values(variants.fields).flat() : []);
  const grouped = new Set(kind.groups.flatMap((g) => g.fields));
  const pick = (names: Iterable<string>) => {
    const wanted = new Set(names);
    return fields.filter((f) => wanted.has(f.name));
  };
  const sections: Section[] = [{ fields: fields.filter((f) => !ofVariants.has(f.name) && !grouped.has(f.name)) }];
  const own = variants ? pick(variants.fields[chosen] ?? []) : [];
  if (own.length > 0) sections.push({ title: `Fields of a “${chosen}” ${inSentence(kind.singular)}`, fields: own });
  for (const g of kind.groups) sections.push({ title: g.title, fields: pick(g.fields).filter((f) => !ofVariants.has(f.name)) });
  const kept = sections.filter((x) => x.fields.length > 0);
  return { sections: kept, shown: kept.flatMap((x) => x.fields) };
}

/** The body a form's values make, and a violation for each field whose JSON does not parse. */
function bodyOf(fields: ConsoleField[], values: Values): { body: Record<string, unknown>; local: Violation[] } {
  const body: Record<string, unknown> = {};
  const local: Violation[] = [];
  for (const f of fields) {
    try {
      const v = fromInput(f, values[f.name] ?? "");
      if (v !== undefined) body[f.name] = v;
    } catch {
      local.push({ property: f.name, message: "must be JSON" });
    }
  }
  return { body, local };
}

/**
 * The form's values: a new item's defaults (a tenant user's tenant in its tenant field, then the
 * address's query: a pool's loadBalancerId from its load balancer's page), or the edited item's
 * as it is now, read again by `reload`, whose ETag goes with the next save.
 */
function useFormValues(kind: ConsoleKind, who: Identity, fields: ConsoleField[], path: string | undefined, query: string | undefined, setError: (e: unknown) => void) {
  const [values, setValues] = useState<Values>(() => {
    const given = new URLSearchParams(query ?? "");
    return Object.fromEntries(
      fields.map((f) => {
        if (given.has(f.name)) return [f.name, f.type === "boolean" && !f.repeated ? given.get(f.name) === "true" : given.get(f.name)!];
        if (f.name === kind.tenantField && who.tenantId) return [f.name, who.tenantId];
        // A required field with one allowed value and no default: that value (a pool's ROUND_ROBIN).
        if (f.required && f.default === undefined && !f.repeated && f.enumValues?.length === 1) return [f.name, f.enumValues[0]!];
        return [f.name, toInput(f, f.default)];
      }),
    );
  });
  const [etag, setEtag] = useState<string | undefined>();
  const [itemLabel, setItemLabel] = useState<string>("");
  /** The item as it is now: its ETag goes with the next save; its values are returned. */
  const current = async (): Promise<Values> => {
    const a = await call("GET", path!);
    setEtag(a.headers.get("etag") ?? undefined);
    setItemLabel(itemName(kind, a.body, path!));
    return Object.fromEntries(fields.map((f) => [f.name, toInput(f, a.body[f.name])]));
  };
  const reload = async () => {
    if (!path) return;
    setValues(await current());
  };
  useEffect(() => {
    reload().catch(setError);
  }, [path]);
  return { values, setValues, etag, itemLabel, reload, current };
}

type SaveOptions = {
  kind: ConsoleKind;
  fields: ConsoleField[];
  values: Values;
  path?: string;
  parent?: string;
  target: { path?: string; missing: string[] };
  etag?: string;
  current: () => Promise<Values>;
};

/** The form's fields whose value is this id, or holds it (a list of ids): a 404 naming it is that field's dangling reference. */
function fieldsNaming(fields: ConsoleField[], values: Values, message: string): Violation[] {
  const ids = (f: ConsoleField) => {
    const v = values[f.name];
    if (typeof v !== "string") return [];
    return (f.repeated ? v.split(",") : [v]).map((x) => x.trim()).filter(Boolean);
  };
  return fields
    .filter((f) => f.ref && ids(f).some((id) => message.includes(id)))
    .map((f) => {
      const k = KINDS.get(f.ref!);
      return { property: f.name, message: `names no ${k ? inSentence(k.singular) : "item"} you can see: it may have been deleted. Choose another.` };
    });
}

/**
 * Saving: PUT with If-Match or POST, then the item's page, with a toast; the API's violations
 * beside their fields, a 404 naming a field's id on that field. A 412 keeps what the person typed
 * and shows what the item holds now beside it: saving again (with the new ETag) writes theirs.
 */
function useSave({ kind, fields, values, path, parent, target, etag, current }: SaveOptions, setError: (e: unknown) => void) {
  const [violations, setViolations] = useState<Violation[]>([]);
  const [conflict, setConflict] = useState<Values | undefined>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    setViolations([]);
    const { body, local } = bodyOf(fields, values);
    if (local.length > 0) {
      setViolations(local);
      setBusy(false);
      return;
    }
    try {
      if (path !== undefined) {
        const a = await call("PUT", path, body, etag ? { "if-match": etag } : {});
        const to = itemPath(kind, a.body, parentPathOf(kind, path));
        toast(`${kind.singular} “${itemName(kind, a.body, to)}” saved.`);
        go({ page: "item", kind: kind.kind, path: to });
      } else {
        if (!target.path) throw new ApiError(400, `Give the ${listing(target.missing.map(fieldLabel))} first`);
        const a = await call("POST", target.path, body);
        const to = itemPath(kind, a.body, parent);
        toast(`${kind.singular} “${itemName(kind, a.body, to)}” created.`);
        go({ page: "item", kind: kind.kind, path: to });
      }
    } catch (err) {
      const dangling = err instanceof ApiError && err.status === 404 ? fieldsNaming(fields, values, err.message) : [];
      if (err instanceof ApiError && err.status === 412 && path !== undefined) {
        setConflict(
          await current().catch((e2: unknown) => {
            setError(e2);
            return undefined;
          }),
        );
      } else if (dangling.length > 0) {
        setViolations(dangling);
      } else if (err instanceof ApiError && err.violations.length > 0) {
        setViolations(err.violations);
        setError(err);
      } else setError(err);
      setBusy(false);
    }
  };
  return { submit, violations, conflict, setConflict, busy };
}

/** What the item holds now beside what the person typed, for the fields that differ; either may be kept. */
function ConflictView({ kind, fields, mine, theirs, onTake, onDismiss }: { kind: ConsoleKind; fields: ConsoleField[]; mine: Values; theirs: Values; onTake: () => void; onDismiss: () => void }) {
  const differ = fields.filter((f) => String(mine[f.name] ?? "") !== String(theirs[f.name] ?? ""));
  const text = (v: string | boolean | undefined) => (v === true ? "yes" : v === false ? "no" : v === undefined || v === "" ? "—" : v);
  return (
    <section class="conflict" role="alert" aria-labelledby="conflict-title">
      <h2 id="conflict-title" class="conflict-title">Someone else changed this {inSentence(kind.singular)}</h2>
      <p>
        It was changed by someone else since you opened it. Your values are kept in the form.
        {differ.length > 0 ? " Where they differ from what it holds now:" : " It now holds the values you typed."}
      </p>
      {differ.length > 0 && (
        <table class="diff">
          <thead>
            <tr>
              <th scope="col">Field</th>
              <th scope="col">Yours</th>
              <th scope="col">Now</th>
            </tr>
          </thead>
          <tbody>
            {differ.map((f) => (
              <tr key={f.name}>
                <th scope="row">{f.label}</th>
                <td class="mine">{text(mine[f.name])}</td>
                <td class="theirs">{text(theirs[f.name])}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <p>Save again to write yours over it, or take its current values.</p>
      <div class="actions">
        <button type="button" onClick={onTake}>
          Take the current values
        </button>
        <button type="button" class="link" onClick={onDismiss}>
          Hide
        </button>
      </div>
    </section>
  );
}

/** The violations naming one of the form's fields, by field, and the others. */
function placeViolations(fields: ConsoleField[], violations: Violation[]) {
  const byField = new Map<string, Violation[]>();
  for (const v of violations) {
    const name = fieldOfViolation(v.property);
    if (fields.some((f) => f.name === name)) byField.set(name, [...(byField.get(name) ?? []), v]);
  }
  const elsewhere = violations.filter((v) => !byField.has(fieldOfViolation(v.property)));
  return { byField, elsewhere };
}

/** The violations naming no field of the form, listed above it. */
function OtherViolations({ violations }: { violations: Violation[] }) {
  if (violations.length === 0) return null;
  return (
    <ul class="error">
      {violations.map((v) => (
        <li key={v.property + v.message}>
          {fieldLabel(v.property)} {plainWords(v.message)}
        </li>
      ))}
    </ul>
  );
}

/**
 * Where to create, when the kind is created under one of several parents (a port: on a router or
 * on a bridge): a choice of them. Then an input for each variable of the create path that the
 * page's parent does not give: a picker of the items it names (a router for routerId).
 */
function PathFields({ kind, who, templates, chosen, onChoose, missing, values, onValues }: { kind: ConsoleKind; who: Identity; templates: string[]; chosen: number; onChoose: (n: number) => void; missing: string[]; values: Record<string, string>; onValues: (v: Record<string, string>) => void }) {
  const parentKind = (t: string) => {
    const v = [...t.matchAll(/\{(\w+)\}/g)].at(-1)?.[1];
    const k = v ? KINDS.get(kind.pathRefs[v] ?? "") : undefined;
    return k ? `On a ${inSentence(k.singular)}` : t;
  };
  return (
    <>
      {templates.length > 1 && (
        <div class="field">
          <label for="path-template">Where</label>
          <select id="path-template" value={String(chosen)} onChange={(e) => onChoose(Number(e.currentTarget.value))}>
            {templates.map((t, n) => (
              <option key={t} value={String(n)}>
                {parentKind(t)}
              </option>
            ))}
          </select>
        </div>
      )}
      {missing.map((v) => {
        const common = { id: `path-${v}`, required: true, "aria-required": "true" as const };
        const ref = kind.pathRefs[v];
        return (
          <div class="field" key={v}>
            <label for={`path-${v}`}>
              {ref ? (KINDS.get(ref)?.singular ?? fieldLabel(v)) : fieldLabel(v)} <span aria-hidden="true">*</span>
            </label>
            {ref ? (
              <RefPicker refKind={ref} who={who} common={common} value={values[v] ?? ""} onValue={(x) => onValues({ ...values, [v]: x })} />
            ) : (
              <input {...common} value={values[v] ?? ""} onInput={(e) => onValues({ ...values, [v]: e.currentTarget.value })} />
            )}
          </div>
        );
      })}
    </>
  );
}

/** The variables of a create path the person gives (not the parent's): asked for whether given yet or not, so a picker stays while typed in. */
function pathVariables(template: string | undefined, parent: string | undefined): string[] {
  if (!template) return [];
  const given = parent ? parent.split("/").length - 1 : 0;
  return template
    .split("/")
    .slice(1)
    .flatMap((s, i) => (i >= given && /^\{\w+\}$/.test(s) ? [s.slice(1, -1)] : []));
}

export function FormPage({ kind, who, path, parent, query }: { kind: ConsoleKind; who: Identity; path?: string; parent?: string; query?: string }) {
  const editing = path !== undefined;
  const fields = formFields(kind, editing);
  const [error, setError] = useState<unknown>();
  const { values, setValues, etag, itemLabel, current } = useFormValues(kind, who, fields, path, query, setError);
  const [pathValues, setPathValues] = useState<Record<string, string>>({});
  // Under no parent, a kind created in several places (a port) is created where the user chooses.
  const [chosen, setChosen] = useState(0);
  const title = editing ? `Edit ${inSentence(kind.singular)}${itemLabel ? ` “${itemLabel}”` : ""}` : `New ${inSentence(kind.singular)}`;
  const heading = usePage(title);
  const target = editing ? { path, missing: [] as string[] } : fillPath(parent ? kind.createTemplates : kind.createTemplates.slice(chosen, chosen + 1), parent, pathValues);
  // Only the fields on the form are sent: not those of a type other than the one chosen.
  const { sections, shown } = sectionsOf(kind, fields, values);
  const { submit, violations, conflict, setConflict, busy } = useSave({ kind, fields: shown, values, path, parent, target, etag, current }, setError);
  const { byField, elsewhere } = placeViolations(shown, violations);
  const field = (f: ConsoleField) => <Field key={f.name} field={f} who={who} value={values[f.name] ?? ""} violations={byField.get(f.name) ?? []} onValue={(v) => setValues({ ...values, [f.name]: v })} />;
  const back = path ?? parent;
  const backKind = path ? kind : kind.parent ? KINDS.get(kind.parent) : undefined;

  return (
    <div class="form-page">
      <h1 tabindex={-1} ref={heading}>
        {title}
      </h1>
      {conflict && (
        <ConflictView
          kind={kind}
          fields={fields}
          mine={values}
          theirs={conflict}
          onTake={() => {
            setValues(conflict);
            setConflict(undefined);
          }}
          onDismiss={() => setConflict(undefined)}
        />
      )}
      <ErrorNote error={error} />
      <OtherViolations violations={elsewhere} />
      <form onSubmit={submit} noValidate>
        <p class="hint">
          Fields marked <span aria-hidden="true">*</span>
          <span class="visually-hidden">required</span> are required.
        </p>
        <PathFields
          kind={kind}
          who={who}
          templates={parent || editing ? [] : kind.createTemplates}
          chosen={chosen}
          onChoose={setChosen}
          missing={pathVariables(editing ? undefined : "template" in target ? target.template : undefined, parent)}
          values={pathValues}
          onValues={setPathValues}
        />
        {sections.map((x) =>
          x.title === undefined ? (
            x.fields.map(field)
          ) : (
            <fieldset class="group" key={x.title}>
              <legend>{x.title}</legend>
              {x.fields.map(field)}
            </fieldset>
          ),
        )}
        <div class="actions">
          <button type="submit" class="primary" disabled={busy}>
            {editing ? "Save" : "Create"}
          </button>
          {back && backKind ? <a href={href({ page: "item", kind: backKind.kind, path: back })}>Cancel</a> : <a href={href({ page: "list", kind: kind.kind })}>Cancel</a>}
        </div>
      </form>
    </div>
  );
}

/** A field's help and the API's violations of it, under it (named by its aria-describedby). */
function FieldNotes({ id, help, violations }: { id: string; help: string[]; violations: Violation[] }) {
  return (
    <>
      {help.length > 0 && (
        <p class="help" id={`${id}-help`}>
          {help.join(" ")}
        </p>
      )}
      {violations.length > 0 && (
        <p class="field-error" id={`${id}-error`}>
          {violations
            .map((v) => plainWords(v.message))
            .map((m) => m.charAt(0).toUpperCase() + m.slice(1))
            .join("; ")}
        </p>
      )}
    </>
  );
}

function Field({ field: f, who, value, violations, onValue }: { field: ConsoleField; who: Identity; value: string | boolean; violations: Violation[]; onValue: (v: string | boolean) => void }) {
  const id = `field-${f.name}`;
  const help: string[] = [];
  if (f.name === "id" && !f.required) help.push("Optional: the service gives one when empty.");
  else if (f.createOnly) help.push("Set on create only.");
  if (f.repeated && f.type !== "json" && !f.enumValues && !f.ref) help.push("Several values separated by commas.");
  if (f.type === "json") help.push("JSON.");
  const empty = f.default === "" || (Array.isArray(f.default) && f.default.length === 0);
  if (f.default !== undefined && f.type !== "boolean" && !empty) help.push(`Default: ${typeof f.default === "string" ? f.default || "(empty)" : JSON.stringify(f.default)}.`);
  const describedBy = [help.length > 0 ? `${id}-help` : "", violations.length > 0 ? `${id}-error` : ""].filter(Boolean).join(" ") || undefined;
  const common = { id, name: f.name, "aria-describedby": describedBy, "aria-invalid": violations.length > 0 ? ("true" as const) : undefined, "aria-required": f.required ? ("true" as const) : undefined };
  let input: preact.JSX.Element;
  if (f.type === "boolean" && !f.repeated) {
    input = <input type="checkbox" {...common} checked={value === true} onChange={(e) => onValue(e.currentTarget.checked)} />;
  } else if (f.enumValues && f.repeated) {
    // Several of the allowed values: a checkbox each.
    const chosen = new Set(
      String(value)
        .split(",")
        .map((v) => v.trim())
        .filter(Boolean),
    );
    const toggle = (v: string, on: boolean) => {
      if (on) chosen.add(v);
      else chosen.delete(v);
      onValue(f.enumValues!.filter((x) => chosen.has(x)).join(", "));
    };
    return (
      <fieldset class={`field choices${violations.length > 0 ? " invalid" : ""}`} aria-describedby={describedBy}>
        <legend>{f.label}</legend>
        {f.enumValues.map((v) => (
          <label key={v}>
            <input type="checkbox" name={f.name} value={v} checked={chosen.has(v)} onChange={(e) => toggle(v, e.currentTarget.checked)} /> {v}
          </label>
        ))}
        <FieldNotes id={id} help={help} violations={violations} />
      </fieldset>
    );
  } else if (f.enumValues && !f.repeated) {
    input = (
      <select {...common} value={String(value)} onChange={(e) => onValue(e.currentTarget.value)}>
        <option value="">—</option>
        {f.enumValues?.map((v) => (
          <option key={v} value={v}>
            {v}
          </option>
        ))}
      </select>
    );
  } else if (f.ref && !f.repeated) {
    // Another item's id: a choice among the items of its kind the user can see.
    input = <RefPicker refKind={f.ref} who={who} common={common} value={String(value)} onValue={onValue} />;
  } else if (f.ref) {
    // A list of other items' ids: several chosen the same way, in order.
    input = <RefListPicker refKind={f.ref} who={who} common={common} value={String(value)} onValue={onValue} />;
  } else if (f.type === "json") {
    input = <textarea {...common} rows={3} value={String(value)} onInput={(e) => onValue(e.currentTarget.value)} />;
  } else {
    const numeric = !f.repeated && (f.type === "integer" || f.type === "number" || f.type === "int64");
    const onInput = (e: preact.TargetedInputEvent<HTMLInputElement>) => onValue(e.currentTarget.value);
    input = f.writeOnly ? (
      <input {...common} type="password" autocomplete="new-password" value={String(value)} onInput={onInput} />
    ) : (
      <input {...common} type="text" inputMode={numeric ? "numeric" : undefined} autocomplete="off" value={String(value)} onInput={onInput} />
    );
  }
  return (
    <div class={`field${f.type === "boolean" && !f.repeated ? " check" : ""}${violations.length > 0 ? " invalid" : ""}`}>
      <label for={id}>
        {f.label}
        {f.required && <span aria-hidden="true"> *</span>}
      </label>
      {input}
      <FieldNotes id={id} help={help} violations={violations} />
    </div>
  );
}
