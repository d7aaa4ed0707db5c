// The descriptor set `buf` builds from the proto files (proto/contract.binpb, `npm run proto`), as
// a registry of its messages, and each field's rules (`buf.validate.field`) read from it. What
// describes the API (the catalog, OpenAPI, the console, the CLI) reads the rules here; rules.ts
// checks messages against them.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { create, createFileRegistry, type DescEnum, type DescField, type DescFile, type DescMessage, type FileRegistry, fromBinary, getOption, hasOption, ScalarType, toBinary, toJson } from "@bufbuild/protobuf";
import { type FileDescriptorProto, FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { type FieldRules, FieldRulesSchema, field as fieldRulesOption, type StringRules } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { isRecord } from "./values.ts";

/** The descriptor set's file name in a proto directory. */
export const CONTRACT_FILE = "contract.binpb";

/** The messages of the descriptor set built from the proto files in `dir`. */
export function loadDescriptors(dir: string): FileRegistry {
  return descriptorsOf(readFileSync(join(dir, CONTRACT_FILE)));
}

/**
 * The comments of each file's declarations, by source-information path ("4.0.2.1"): all a part
 * reads of the source information, which is then dropped (parsed, it is about 70% of the set's
 * memory, over 4 MB in every process).
 */
const COMMENTS = new WeakMap<FileDescriptorProto, ReadonlyMap<string, string>>();

/** The messages of a descriptor set's bytes (what `buf build` writes), with their comments kept apart. */
export function descriptorsOf(bytes: Uint8Array): FileRegistry {
  const set = fromBinary(FileDescriptorSetSchema, bytes);
  for (const file of set.file) {
    const comments = new Map<string, string>();
    for (const loc of file.sourceCodeInfo?.location ?? []) {
      const text = (loc.leadingComments || loc.trailingComments)
        .split("\n")
        .map((l) => l.trim())
        .join("\n")
        .trim();
      if (text) comments.set(loc.path.join("."), text);
    }
    COMMENTS.set(file, comments);
    file.sourceCodeInfo = undefined;
  }
  return createFileRegistry(set);
}

/**
 * The part of a descriptor set that crosses the wire for the services of one proto package
 * (`vnm.bridge.v1`), or of every package: the files of the services and of the messages and
 * enums their methods carry (field by field), without source information. What only declares
 * options (buf.validate, google.api, vnm.api) stays out: grpc-js's package definition of the
 * whole set held 2 MB more in every process.
 */
export function wireDescriptors(registry: FileRegistry, protoPackage?: string): Uint8Array {
  const files = new Set<string>();
  const seen = new Set<DescMessage | DescEnum>();
  const visit = (d: DescMessage | DescEnum | undefined): void => {
    if (!d || seen.has(d)) return;
    seen.add(d);
    files.add(d.file.proto.name);
    if (d.kind === "message") for (const f of d.fields) visit(f.message ?? f.enum);
  };
  for (const file of registry.files) {
    if (protoPackage !== undefined && file.proto.package !== protoPackage) continue;
    for (const svc of file.services) {
      files.add(file.proto.name);
      for (const m of svc.methods) {
        visit(m.input);
        visit(m.output);
      }
    }
  }
  // descriptorsOf dropped the source information already.
  return toBinary(FileDescriptorSetSchema, create(FileDescriptorSetSchema, { file: [...registry.files].filter((f) => files.has(f.proto.name)).map((f) => f.proto) }));
}

/** The comment above (else beside) the declaration at a source-information path of a file, trimmed. */
export function commentAt(file: DescFile, path: readonly number[]): string | undefined {
  return COMMENTS.get(file.proto)?.get(path.join("."));
}

const SCALAR_NAMES: Record<number, string> = Object.fromEntries(
  Object.entries(ScalarType)
    .filter(([, v]) => typeof v === "number")
    .map(([k, v]) => [v, k.toLowerCase()]),
);

/**
 * A scalar type's name as a .proto spells it ("int64"), by its number (protobuf-es's ScalarType,
 * which is descriptor.proto's field type); undefined for a message, an enum or a group.
 */
export function scalarName(type: number): string | undefined {
  return SCALAR_NAMES[type];
}

/** A field's rules as the proto states them, if any. */
export function fieldRules(f: DescField): FieldRules | undefined {
  return hasOption(f, fieldRulesOption) ? getOption(f, fieldRulesOption) : undefined;
}

/** The string rules of a string field, or of each item of a repeated one, if any. */
export function stringRules(f: DescField): StringRules | undefined {
  return stringRulesIn(fieldRules(f));
}

/** The string rules inside a field's rules (its own, or its items'), as objects of `rules`. */
export function stringRulesIn(rules: FieldRules | undefined): StringRules | undefined {
  const own = rules?.type.case === "repeated" ? rules.type.value.items : rules;
  return own?.type.case === "string" ? own.type.value : undefined;
}

/**
 * A field's rules in protobuf's JSON form with proto field names (`{string: {max_len: "255"}}`,
 * vnm's own as `[vnm.api.mac]`); undefined when it has none.
 */
export function fieldRulesJson(registry: FileRegistry, f: DescField): Record<string, unknown> | undefined {
  const r = fieldRules(f);
  const json = r && toJson(FieldRulesSchema, r, { registry, useProtoFieldName: true });
  return isRecord(json) ? json : undefined;
}
