// A field's rules, as the proto states them: `(buf.validate.field)` constraints (formats, lengths,
// ranges, allowed values, required) and vnm's predefined ones (vnm/api/rules.proto), checked by
// protovalidate over the descriptor set `buf` builds from the proto files (descriptors.ts). Every
// service checks a body here, once, in the kit; what no constraint can state (one field against
// another, against the database) stays in code beside its kind.
import { clone, createFileRegistry, type DescField, type DescFile, type DescMessage, type FileRegistry, fromJson, type Message, setExtension } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { createValidator, type Validator } from "@bufbuild/protovalidate";
import { field as fieldRulesOption } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { CONTRACT_FILE, fieldRules, loadDescriptors, stringRules, stringRulesIn } from "./descriptors.ts";
import { ApiError, type Violation } from "./errors.ts";
import type { MessageFields, Messages, RequiredFields } from "./gen/messages.ts";
import { canonicalIpv6 } from "./validate.ts";
import { messageOf } from "./values.ts";

/** A message of the contract by its full proto name ("vnm.lb.v1.Pool"). */
export type MessageName = keyof Messages;

/**
 * A message that passed its rules: of its fields' types, with the fields they require, and so
 * each message inside it.
 */
export type Checked<P extends MessageName> = WithRequired<{ [K in keyof Messages[P]]: Inner<Messages[P][K], K extends keyof MessageFields[P] ? MessageFields[P][K] : never> }, RequiredFields[P]>;

type WithRequired<T, K> = T & { [F in K & keyof T]-?: Exclude<T[F], undefined> };

/** A field's value that passed its rules: a message (or list of them) of name N checked in turn. */
type Inner<V, N> = [N] extends [never] ? V : N extends MessageName ? (Exclude<V, undefined> extends unknown[] ? Checked<N>[] : Checked<N>) | Extract<V, undefined> : V;

/** How a string field's value is kept once it passed its rules: one spelling per value. */
type Normal = (s: string) => string;

const lower: Normal = (s) => s.toLowerCase();
const ipv6: Normal = (s) => canonicalIpv6(s) ?? s;

/** vnm's predefined string rules (vnm/api/rules.proto): extension field numbers. */
const VNM_MAC = 51100;
const VNM_TEXT = 51101;

/** What a value breaking `(vnm.api.text)` is told (its CEL program's words, rules.proto; rules.spec holds them equal). */
export const TEXT_RULE_MESSAGE = "must be valid Unicode text without NUL characters";

/** The rules of one message: the validator's, and the spelling each string field is kept in. */
interface MessageRules {
  schema: DescMessage;
  /** The same message as the validator is given it (a copy of its file without the text rule: withoutTextRule). */
  validated: DescMessage;
  /** Each string field's spelling, and each message field's own (a pool reference in a list). */
  normal: Map<string, Normal | DescMessage>;
  /** The fields `(vnm.api.text)` holds (a string, or each string of a list), and the message fields that hold some. */
  text: Map<string, true | DescMessage>;
}

export class Rules {
  readonly registry: FileRegistry;
  private readonly validator: Validator;
  /** The copies of files the validator reads (withoutTextRule), by file name: made when a message of the file is first checked. */
  private readonly validating = new Map<string, FileRegistry>();
  private readonly messages = new Map<string, MessageRules>();

  constructor(registry: FileRegistry) {
    this.registry = registry;
    this.validator = createValidator({ registry });
  }

  /** The rules of the proto files in `dir`, from the descriptor set built from them. */
  static load(dir: string): Rules {
    return new Rules(loadDescriptors(dir));
  }

  /** Whether the descriptor set holds a message (a proto added without `npm run proto` is not). */
  has(typeName: string): boolean {
    return this.registry.getMessage(typeName) !== undefined;
  }

  /**
   * One field's value (a list's query parameter, `?port=`) against that field's rules: a 400
   * naming the field when it breaks one; the value in its one spelling. Rules on other fields
   * of the message (a required one) are not this value's concern.
   */
  checkField(typeName: string, fieldName: string, value: unknown): unknown {
    try {
      return this.check(typeName, { [fieldName]: value })[fieldName];
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      const own = err.violations.filter((v) => v.property === fieldName);
      if (own.length > 0) throw ApiError.invalid(own);
      if (err.violations.length === 0) throw err;
      // The value passed its own rules: kept in its one spelling all the same.
      return this.spelled(typeName, { [fieldName]: value })[fieldName];
    }
  }

  private message(typeName: string): MessageRules {
    let m = this.messages.get(typeName);
    if (!m) {
      const schema = this.registry.getMessage(typeName);
      if (!schema) throw new Error(`${typeName} is not in ${CONTRACT_FILE}: run npm run proto`);
      m = { schema, validated: this.validatedOf(schema), normal: new Map(), text: new Map() };
      this.messages.set(typeName, m);
      for (const f of schema.fields) {
        const n = normalOf(f);
        if (n) m.normal.set(f.name, n);
        else if (f.message && this.spells(f.message.typeName)) m.normal.set(f.name, f.message);
        if (stringRules(f)?.$unknown?.some((u) => u.no === VNM_TEXT)) m.text.set(f.name, true);
        else if (f.message && f.message.typeName !== typeName && this.message(f.message.typeName).text.size > 0) m.text.set(f.name, f.message);
      }
    }
    return m;
  }

  /** The message as the validator is given it: from a copy of its file without the text rule. */
  private validatedOf(schema: DescMessage): DescMessage {
    const name = schema.file.proto.name;
    let copy = this.validating.get(name);
    if (!copy) {
      copy = withoutTextRule(this.registry, schema.file);
      this.validating.set(name, copy);
    }
    return copy.getMessage(schema.typeName) ?? schema;
  }

  /**
   * Checks a message as a gRPC peer decoded it (field names as written, int64 as strings) against
   * its fields' rules; a failure is a 400 with one violation per offending top-level field. Gives
   * back the message with each string kept in its one spelling (UUIDs and MACs in lower case,
   * IPv6 addresses in RFC 5952 form).
   */
  check<T>(typeName: string, value: T): T {
    const { schema, validated } = this.message(typeName);
    let msg: Message;
    try {
      msg = fromJson(schema, value as never, { registry: this.registry });
    } catch (err) {
      // The gateway typed the body by the same proto: a value that is not of its field's type
      // comes from a peer that did not.
      throw ApiError.badRequest(`The body is not a ${schema.name}: ${messageOf(err)}`);
    }
    const result = this.validator.validate(validated, msg);
    if (result.kind === "error") throw result.error;
    const seen = new Map<string, Violation>();
    if (result.kind === "invalid") {
      for (const v of result.violations) {
        const first = v.field[0];
        const property = first?.kind === "field" ? first.name : "body";
        if (!seen.has(property)) seen.set(property, { property, message: v.message });
      }
    }
    for (const property of this.untextual(typeName, value)) if (!seen.has(property)) seen.set(property, { property, message: TEXT_RULE_MESSAGE });
    if (seen.size > 0) {
      // In the fields' order, as the validator names them.
      const order = schema.fields.map((f) => f.name);
      const rank = (p: string) => (order.includes(p) ? order.indexOf(p) : -1);
      throw ApiError.invalid([...seen.values()].sort((a, b) => rank(a.property) - rank(b.property)));
    }
    return this.spelled(typeName, value);
  }

  /**
   * A message as a gRPC peer decoded it (no nulls, unset fields absent) checked against its
   * rules (check), typed as the message that passed them: fromJson took each field by its
   * type, and the validator found the required ones.
   */
  checked<P extends MessageName>(typeName: P, value: unknown): Checked<P> {
    return this.check(typeName, value) as Checked<P>;
  }

  /**
   * The top-level fields whose value, or a value inside it, breaks `(vnm.api.text)`: a NUL
   * character. Checked here rather than by the rule's CEL program, which cost about 3 us a field
   * (the validator is given the descriptors without it: withoutTextRule).
   */
  private untextual(typeName: string, value: unknown): string[] {
    const { text } = this.message(typeName);
    if (text.size === 0 || typeof value !== "object" || value === null) return [];
    const out: string[] = [];
    const breaks = (t: true | DescMessage, x: unknown): boolean => (t === true ? typeof x === "string" && x.includes("\u0000") : this.untextual(t.typeName, x).length > 0);
    for (const [name, t] of text) {
      const v = (value as Record<string, unknown>)[name];
      if (v !== undefined && v !== null && (Array.isArray(v) ? v.some((x) => breaks(t, x)) : breaks(t, v))) out.push(name);
    }
    return out;
  }

  /** Whether a message or one inside it has a field kept in one spelling (a message seen again is not asked twice). */
  private spells(typeName: string): boolean {
    const m = this.message(typeName);
    return m.normal.size > 0;
  }

  /** The message with each of its strings, and its messages' strings, in their one spelling. */
  private spelled<T>(typeName: string, value: T): T {
    const { normal } = this.message(typeName);
    if (normal.size === 0 || typeof value !== "object" || value === null) return value;
    const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
    const one = (n: Normal | DescMessage, x: unknown) => (typeof n === "function" ? (typeof x === "string" ? n(x) : x) : this.spelled(n.typeName, x));
    for (const [name, n] of normal) {
      const v = out[name];
      if (v !== undefined && v !== null) out[name] = Array.isArray(v) ? v.map((x) => one(n, x)) : one(n, v);
    }
    return out as T;
  }
}

/** The spelling a string field (or each item of a repeated one) is kept in, from its rules. */
function normalOf(f: DescField): Normal | undefined {
  const s = stringRules(f);
  if (!s) return undefined;
  if (s.wellKnown.case === "uuid" && s.wellKnown.value) return lower;
  // An address of either family: an IPv6 one in its one spelling, an IPv4 one as it is.
  if ((s.wellKnown.case === "ipv6" || s.wellKnown.case === "ip") && s.wellKnown.value) return ipv6;
  if (s.$unknown?.some((u) => u.no === VNM_MAC)) return lower;
  return undefined;
}

/**
 * A file's descriptors as the validator reads them: the same, without the `(vnm.api.text)` rule,
 * which Rules checks itself (untextual). A copy of that one file (the catalog and the OpenAPI
 * document read the rule from the originals); what its messages hold of other files stays the
 * original, whose text rule the validator then runs as its CEL program (the same words). A copy
 * of every file held 2 MB in each process; a service checks the messages of a file or two.
 */
function withoutTextRule(registry: FileRegistry, file: DescFile): FileRegistry {
  const copy = createFileRegistry(clone(FileDescriptorProtoSchema, file.proto), (name) => registry.getFile(name));
  const own = copy.getFile(file.proto.name);
  for (const type of copy) {
    if (type.kind !== "message" || type.file !== own) continue;
    for (const f of type.fields) {
      const rules = fieldRules(f);
      const s = stringRulesIn(rules);
      if (!rules || !f.proto.options || !s?.$unknown?.some((u) => u.no === VNM_TEXT)) continue;
      s.$unknown = s.$unknown.filter((u) => u.no !== VNM_TEXT);
      // The options are read again from the field's descriptor whenever asked (getOption).
      setExtension(f.proto.options, fieldRulesOption, rules);
    }
  }
  return copy;
}
