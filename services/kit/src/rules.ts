// A field's rules, as the proto states them: `(buf.validate.field)` constraints (formats, lengths,
// ranges, allowed values, required) and vnm's predefined ones (vnm/api/rules.proto), checked by
// protovalidate over the descriptor set `buf` builds from the proto files (descriptors.ts). Every
// service checks a body here, once, in the kit; what no constraint can state (one field against
// another, against the database) stays in code beside its kind.
import { type DescField, type DescMessage, type FileRegistry, fromJson, type Message } from "@bufbuild/protobuf";
import { createValidator, type Validator } from "@bufbuild/protovalidate";
import { CONTRACT_FILE, loadDescriptors, stringRules } from "./descriptors.ts";
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

/** The rules of one message: the validator's, and the spelling each string field is kept in. */
interface MessageRules {
  schema: DescMessage;
  /** Each string field's spelling, and each message field's own (a pool reference in a list). */
  normal: Map<string, Normal | DescMessage>;
}

export class Rules {
  readonly registry: FileRegistry;
  private readonly validator: Validator;
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
      m = { schema, normal: new Map() };
      this.messages.set(typeName, m);
      for (const f of schema.fields) {
        const n = normalOf(f);
        if (n) m.normal.set(f.name, n);
        else if (f.message && this.spells(f.message.typeName)) m.normal.set(f.name, f.message);
      }
    }
    return m;
  }

  /**
   * Checks a message as a gRPC peer decoded it (field names as written, int64 as strings) against
   * its fields' rules; a failure is a 400 with one violation per offending top-level field. Gives
   * back the message with each string kept in its one spelling (UUIDs and MACs in lower case,
   * IPv6 addresses in RFC 5952 form).
   */
  check<T>(typeName: string, value: T): T {
    const { schema } = this.message(typeName);
    let msg: Message;
    try {
      msg = fromJson(schema, value as never, { registry: this.registry });
    } catch (err) {
      // The gateway typed the body by the same proto: a value that is not of its field's type
      // comes from a peer that did not.
      throw ApiError.badRequest(`The body is not a ${schema.name}: ${messageOf(err)}`);
    }
    const result = this.validator.validate(schema, msg);
    if (result.kind === "error") throw result.error;
    if (result.kind === "invalid") {
      const seen = new Map<string, Violation>();
      for (const v of result.violations) {
        const first = v.field[0];
        const property = first?.kind === "field" ? first.name : "body";
        if (!seen.has(property)) seen.set(property, { property, message: v.message });
      }
      throw ApiError.invalid([...seen.values()]);
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
