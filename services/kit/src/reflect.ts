// Reading declarations out of the descriptor set (descriptors.ts): an option's value on a message,
// field, service or method, by the extension's full name, and the proto comment written above (or
// beside) a declaration, from the source information buf keeps in the set.
import { type DescField, type DescFile, type DescMessage, type DescMethod, type DescService, type FileRegistry, getOption, hasOption } from "@bufbuild/protobuf";

type Described = DescMessage | DescField | DescService | DescMethod;

/** The options of one registry: extensions looked up once by name, comments once per file. */
export class Declarations {
  readonly registry: FileRegistry;
  private readonly comments = new Map<DescFile, Map<string, string>>();

  constructor(registry: FileRegistry) {
    this.registry = registry;
  }

  /** The value of option `extension` ("vnm.api.link") on `desc`, or undefined when unset. */
  option<T>(desc: Described, extension: string): T | undefined {
    const ext = this.registry.getExtension(extension);
    if (!ext) throw new Error(`the descriptor set has no option ${extension}`);
    // biome-ignore lint/suspicious/noExplicitAny: the extension's type is known only by its name here
    return hasOption(desc as any, ext as any) ? (getOption(desc as any, ext as any) as T) : undefined;
  }

  /** The comment written above a declaration (else after it on its line), trimmed, or undefined. */
  comment(desc: Described): string | undefined {
    const file = desc.kind === "field" ? desc.parent.file : desc.kind === "rpc" ? desc.parent.file : desc.file;
    return this.commentsOf(file).get(pathOf(desc).join("."));
  }

  private commentsOf(file: DescFile): Map<string, string> {
    let out = this.comments.get(file);
    if (!out) {
      out = new Map();
      for (const loc of file.proto.sourceCodeInfo?.location ?? []) {
        const text = (loc.leadingComments || loc.trailingComments)
          .split("\n")
          .map((l) => l.trim())
          .join("\n")
          .trim();
        if (text) out.set(loc.path.join("."), text);
      }
      this.comments.set(file, out);
    }
    return out;
  }
}

/** descriptor.proto's field numbers on the way to a declaration. */
const FILE_MESSAGE = 4;
const NESTED_MESSAGE = 3;
const MESSAGE_FIELD = 2;
const FILE_SERVICE = 6;
const SERVICE_METHOD = 2;

/** The source-information path of a declaration (FileDescriptorProto field numbers and indexes). */
function pathOf(desc: Described): number[] {
  switch (desc.kind) {
    case "message": {
      const parent = desc.parent;
      if (parent) return [...pathOf(parent), NESTED_MESSAGE, parent.nestedMessages.indexOf(desc)];
      return [FILE_MESSAGE, desc.file.messages.indexOf(desc)];
    }
    case "field":
      return [...pathOf(desc.parent), MESSAGE_FIELD, desc.parent.proto.field.indexOf(desc.proto)];
    case "service":
      return [FILE_SERVICE, desc.file.services.indexOf(desc)];
    case "rpc":
      return [...pathOf(desc.parent), SERVICE_METHOD, desc.parent.methods.indexOf(desc)];
  }
}
