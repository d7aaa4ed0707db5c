// The TypeScript types of the contract's messages (services/kit/src/gen/messages.ts, written by
// `npm run proto`), printed from the descriptor set: each message in the shape a gRPC peer of this
// repository holds it, proto-loader's with the options of proto.ts (field names as written, int64
// as decimal strings, enums as their value names, bytes as Buffers, unset fields and empty lists
// absent, so every field is optional). The vnm packages' messages and enums are printed, and those
// of other packages they use (google.protobuf.Empty), each in a namespace of its package, so a
// type reads as its proto name (`vnm.lb.v1.Pool`). Why not a published generator:
// docs/adding-a-service.md, "Typed messages".
import { type DescEnum, type DescField, type DescMessage, type FileRegistry, ScalarType } from "@bufbuild/protobuf";
import { fieldRules } from "./descriptors.ts";
import { Declarations } from "./reflect.ts";

const SCALAR: Record<ScalarType, string> = {
  [ScalarType.DOUBLE]: "number",
  [ScalarType.FLOAT]: "number",
  [ScalarType.INT32]: "number",
  [ScalarType.UINT32]: "number",
  [ScalarType.SINT32]: "number",
  [ScalarType.FIXED32]: "number",
  [ScalarType.SFIXED32]: "number",
  [ScalarType.INT64]: "string",
  [ScalarType.UINT64]: "string",
  [ScalarType.SINT64]: "string",
  [ScalarType.FIXED64]: "string",
  [ScalarType.SFIXED64]: "string",
  [ScalarType.BOOL]: "boolean",
  [ScalarType.STRING]: "string",
  [ScalarType.BYTES]: "Buffer",
};

type Printed = DescMessage | DescEnum;

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;
const key = (name: string) => (IDENTIFIER.test(name) ? name : JSON.stringify(name));

/** A declaration's proto comment as a doc comment, indented; nothing when it has none. */
function doc(text: string | undefined, indent: string): string[] {
  if (!text) return [];
  const lines = text.replaceAll("*/", "*\\/").split("\n");
  if (lines.length === 1) return [`${indent}/** ${lines[0]} */`];
  return [`${indent}/**`, ...lines.map((l) => `${indent} *${l ? ` ${l}` : ""}`), `${indent} */`];
}

/** The messages and enums of the vnm packages, and of any package they use, by full name. */
function printedTypes(registry: FileRegistry): Map<string, Printed> {
  const out = new Map<string, Printed>();
  const visit = (t: Printed) => {
    if (out.has(t.typeName)) return;
    out.set(t.typeName, t);
    if (t.kind === "message") for (const f of t.fields) used(f).forEach(visit);
  };
  for (const file of registry.files) {
    if (!file.proto.package.startsWith("vnm.")) continue;
    file.messages.forEach(visit);
    file.enums.forEach(visit);
    for (const s of file.services) for (const m of s.methods) [m.input, m.output].forEach(visit);
  }
  return out;
}

/** The message or enum types a field's values are of. */
function used(f: DescField): Printed[] {
  if (f.fieldKind === "message" || f.fieldKind === "enum") return [f.fieldKind === "message" ? f.message : f.enum];
  if (f.fieldKind === "list") return f.listKind === "message" ? [f.message] : f.listKind === "enum" ? [f.enum] : [];
  if (f.fieldKind === "map") return f.mapKind === "message" ? [f.message] : f.mapKind === "enum" ? [f.enum] : [];
  return [];
}

const enumType = (e: DescEnum) => e.values.map((v) => JSON.stringify(v.name)).join(" | ");

/** A field's value type as proto-loader gives it. */
function valueType(f: DescField): string {
  switch (f.fieldKind) {
    case "scalar":
      return SCALAR[f.scalar];
    case "enum":
      return f.enum.typeName;
    case "message":
      return f.message.typeName;
    case "list":
      return `${f.listKind === "scalar" ? SCALAR[f.scalar] : f.listKind === "enum" ? f.enum.typeName : f.message.typeName}[]`;
    case "map": {
      const v = f.mapKind === "scalar" ? SCALAR[f.scalar] : f.mapKind === "enum" ? f.enum.typeName : f.message.typeName;
      return `{ [key: string]: ${v} }`;
    }
  }
}

/** The name of a type within its package's namespace ("Pool", "Outer.Inner"). */
function localName(t: Printed): string {
  const pkg = t.file.proto.package;
  return pkg ? t.typeName.slice(pkg.length + 1) : t.typeName;
}

function printType(t: Printed, decl: Declarations, indent: string): string[] {
  const name = localName(t).split(".").pop()!;
  if (t.kind === "enum") return [`${indent}type ${name} = ${enumType(t)};`];
  // A message of no fields decodes to an empty object, and holds nothing else.
  if (t.fields.length === 0) return [...doc(decl.comment(t), indent), `${indent}type ${name} = Record<string, never>;`];
  const fields = t.fields.flatMap((f) => [...doc(decl.comment(f), `${indent}  `), `${indent}  ${key(f.name)}?: ${valueType(f)};`]);
  // A type literal, not an interface: a message is then also a Record<string, unknown> (a field by name).
  return [...doc(decl.comment(t), indent), `${indent}type ${name} = {`, ...fields, `${indent}};`];
}

/** The source of services/kit/src/gen/messages.ts for the descriptor set's registry. */
export function messageTypesSource(registry: FileRegistry): string {
  const decl = new Declarations(registry);
  const types = [...printedTypes(registry).values()].sort((a, b) => (a.typeName < b.typeName ? -1 : 1));
  const byScope = new Map<string, Printed[]>();
  for (const t of types) {
    const local = localName(t);
    const scope = [t.file.proto.package, ...local.split(".").slice(0, -1)].filter(Boolean).join(".");
    byScope.set(scope, [...(byScope.get(scope) ?? []), t]);
  }
  const out = [
    "// Generated by `npm run proto` (deploy/proto.ts, services/kit/src/message-types.ts) from the",
    "// descriptor set proto/contract.binpb: do not edit. Each message as a gRPC peer of this",
    "// repository holds it (proto-loader with proto.ts's options): field names as written, int64 as",
    "// decimal strings, enums as their value names, unset fields and empty lists absent.",
    "",
  ];
  for (const [scope, members] of byScope) {
    out.push(`export declare namespace ${scope} {`, ...members.flatMap((t) => printType(t, decl, "  ")), "}", "");
  }
  const messages = types.filter((t): t is DescMessage => t.kind === "message");
  out.push("/** Every message above by its full proto name. */", "export interface Messages {");
  for (const m of messages) out.push(`  ${JSON.stringify(m.typeName)}: ${m.typeName};`);
  out.push("}", "");
  out.push(
    "/** The fields of each message its rules require (`(buf.validate.field).required`): present in a message that passed them. */",
    "export interface RequiredFields {",
  );
  for (const m of messages) {
    const names = m.fields.filter((f) => fieldRules(f)?.required).map((f) => JSON.stringify(f.name));
    out.push(`  ${JSON.stringify(m.typeName)}: ${names.length > 0 ? names.join(" | ") : "never"};`);
  }
  out.push("}", "");
  out.push("/** The fields of each message that hold messages (one, or a list), and those messages' names. */", "export interface MessageFields {");
  for (const m of messages) {
    const nested = m.fields.flatMap((f) => {
      const of = f.fieldKind === "message" ? f.message : f.fieldKind === "list" && f.listKind === "message" ? f.message : undefined;
      return of ? [`${key(f.name)}: ${JSON.stringify(of.typeName)}`] : [];
    });
    out.push(`  ${JSON.stringify(m.typeName)}: ${nested.length > 0 ? `{ ${nested.join("; ")} }` : "Record<never, never>"};`);
  }
  out.push("}", "");
  return out.join("\n");
}
