// A strict check of rendered Kubernetes objects against the schema of their kind, offline: the
// API types of kubernetes-types (generated from the Kubernetes 1.30 OpenAPI definitions) turned
// into JSON Schema by ts-json-schema-generator with every object closed, then checked by ajv.
// An unknown field is an error (as `kubectl apply --validate=strict` and the API server's
// strict field validation refuse it), so are a missing required field, a value of the wrong
// type, an apiVersion or kind that does not belong together, and a kind without a schema here:
// never skipped. A custom resource is checked against the schema written for it in
// crd-schemas.ts (CloudNativePG's Cluster), as strictly; one without such a schema is refused.
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import { createGenerator, type SchemaGenerator } from "ts-json-schema-generator";
import { CUSTOM_RESOURCE_SCHEMAS, KUBERNETES_TYPES, type KubernetesType, kubernetesTypeId } from "./crd-schemas.ts";

const TYPES = dirname(createRequire(import.meta.url).resolve("kubernetes-types/package.json"));

/** The declaration file of an apiVersion's types: "v1" → core/v1, "networking.k8s.io/v1" → networking/v1. */
function typesFile(apiVersion: string): string | undefined {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/", 2) : ["core", apiVersion];
  if (!/^[a-z0-9.-]+$/.test(group!) || !/^v[0-9a-z]+$/.test(version!)) return undefined;
  const file = join(TYPES, group!.split(".")[0]!, `${version}.d.ts`);
  return existsSync(file) ? file : undefined;
}

const ajv = new Ajv({ allErrors: true, strict: false });
const compiled = new Map<string, ValidateFunction | string>();
// One TypeScript program per declaration file, whatever the kinds asked of it (the costly part).
const generators = new Map<string, SchemaGenerator>();
const generatorOf = (path: string): SchemaGenerator => {
  const known = generators.get(path);
  if (known) return known;
  const made = createGenerator({ path, type: "*", additionalProperties: false, expose: "all", topRef: true, jsDoc: "none", skipTypeCheck: true });
  generators.set(path, made);
  return made;
};

/** Whether a kind of an apiVersion is a custom resource with a schema of its own (crd-schemas.ts). */
export const isCustomResource = (apiVersion: string, kind: string): boolean => Object.hasOwn(CUSTOM_RESOURCE_SCHEMAS, `${apiVersion} ${kind}`);

/** The Kubernetes types the custom resources' schemas refer to, each registered once under its id. */
let typesRegistered = false;
function registerKubernetesTypes(): void {
  if (typesRegistered) return;
  for (const [type, version] of Object.entries(KUBERNETES_TYPES)) {
    const schema = generatorOf(join(TYPES, `${version}.d.ts`)).createSchema(type);
    ajv.addSchema(schema, kubernetesTypeId(type as KubernetesType));
  }
  typesRegistered = true;
}

/** The validator of one kind of one apiVersion, or why there is none. */
function validatorOf(apiVersion: string, kind: string): ValidateFunction | string {
  const key = `${apiVersion} ${kind}`;
  const known = compiled.get(key);
  if (known) return known;
  if (isCustomResource(apiVersion, kind)) {
    registerKubernetesTypes();
    const made = ajv.compile(CUSTOM_RESOURCE_SCHEMAS[key]!);
    compiled.set(key, made);
    return made;
  }
  const file = typesFile(apiVersion);
  let found: ValidateFunction | string = `no Kubernetes schema for apiVersion ${JSON.stringify(apiVersion)}, kind ${JSON.stringify(kind)} (a custom resource needs a schema of its own here)`;
  if (file && /^[A-Z][A-Za-z0-9]*$/.test(kind)) {
    let schema: { definitions?: Record<string, { required?: string[]; properties?: Record<string, unknown> }> } | undefined;
    try {
      schema = generatorOf(file).createSchema(kind) as typeof schema;
    } catch {
      // No such type in that group's version.
    }
    const root = schema?.definitions?.[kind];
    // A kind of its own: an object that names its apiVersion and kind (kubernetes-types' literal types).
    if (root?.properties?.["apiVersion"] && root.properties["kind"]) {
      root.required = [...new Set([...(root.required ?? []), "apiVersion", "kind", "metadata"])];
      found = ajv.compile(schema!);
    }
  }
  compiled.set(key, found);
  return found;
}

const explain = (e: ErrorObject): string => {
  const at = e.instancePath || "/";
  if (e.keyword === "additionalProperties") return `${at}: unknown field ${JSON.stringify(e.params["additionalProperty"])}`;
  if (e.keyword === "required") return `${at}: missing required field ${JSON.stringify(e.params["missingProperty"])}`;
  return `${at}: ${e.message}${e.keyword === "const" || e.keyword === "enum" ? ` ${JSON.stringify(e.params["allowedValue"] ?? e.params["allowedValues"])}` : ""}`;
};

/**
 * What is wrong with each object, one line per object ("Kind/name: /path: problem; ..."), in the
 * order given; none when every object is valid for its kind.
 */
export function strictProblems(objects: unknown[]): string[] {
  const problems: string[] = [];
  for (const o of objects) {
    const { apiVersion, kind, metadata } = (o ?? {}) as { apiVersion?: unknown; kind?: unknown; metadata?: { name?: unknown } };
    const name = `${String(kind)}/${String(metadata?.name)}`;
    if (typeof apiVersion !== "string" || typeof kind !== "string") {
      problems.push(`${name}: no apiVersion or kind`);
      continue;
    }
    const validate = validatorOf(apiVersion, kind);
    if (typeof validate === "string") problems.push(`${name}: ${validate}`);
    else if (!validate(o)) problems.push(`${name}: ${[...new Set(validate.errors!.map(explain))].join("; ")}`);
  }
  return problems;
}
