// Reading declarations out of the descriptor set (descriptors.ts): an option's value on a message,
// field, service or method, by the extension's full name, and the proto comment written above (or
// beside) a declaration, as descriptors.ts kept it from the source information buf writes.
import { type DescField, type DescMessage, type DescMethod, type DescService, type FileRegistry, getOption, hasOption } from "@bufbuild/protobuf";
import { commentAt } from "./descriptors.ts";

type Described = DescMessage | DescField | DescService | DescMethod;

/** The options of one registry (extensions looked up by name), and the comments descriptors.ts kept. */
export class Declarations {
  readonly registry: FileRegistry;

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
    return commentAt(file, pathOf(desc));
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
