// A strict check of rendered Kubernetes objects against the schema of their kind, offline: the
// API types of kubernetes-types (generated from the Kubernetes 1.30 OpenAPI definitions) turned
// into JSON Schema by ts-json-schema-generator with every object closed, then checked by ajv.
// An unknown field is an error (as `kubectl apply --validate=strict` and the API server's
// strict field validation refuse it), so are a missing required field, a value of the wrong
// type, an apiVersion or kind that does not belong together, and a kind without a schema here:
// never skipped. A custom resource is checked the same way against its operator's own API
// types, as a package of kubernetes-models' family declares them (CUSTOM_RESOURCE_PACKAGES:
// CloudNativePG's Cluster, 1.29.0's api/v1; the manifests need 1.25 or later); one of a group
// no package here declares is refused. The values the declarations do not carry (enums,
// minimums, formats) are modelProblems', by the same packages' published validators.
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import { createGenerator, type SchemaGenerator } from "ts-json-schema-generator";

const require = createRequire(import.meta.url);
const TYPES = dirname(require.resolve("kubernetes-types/package.json"));

/**
 * The custom resources' apiVersions whose types a package of kubernetes-models' family declares,
 * generated from the operator's Go API types (its declaration of a kind K is <apiVersion>/K.d.ts,
 * the interface IK; its classes validate values): the schema, as kubernetes-types' declarations
 * are the built-in kinds'. @kubernetes-models/cloudnative-pg 2.0.0, pinned in e2e/package.json,
 * is generated from CloudNativePG 1.29.0's api/v1.
 */
const CUSTOM_RESOURCE_PACKAGES: Record<string, string> = { "postgresql.cnpg.io/v1": "@kubernetes-models/cloudnative-pg" };

/**
 * The declaration file of an apiVersion's types and the name of a kind's type in it: "v1" →
 * kubernetes-types' core/v1 (the type Pod), "networking.k8s.io/v1" → networking/v1, a custom
 * resource's apiVersion → its package's declaration of the kind alone (the type ICluster).
 */
function declarationOf(apiVersion: string, kind: string): { file: string; type: string; custom: boolean } | undefined {
  if (!/^[A-Z][A-Za-z0-9]*$/.test(kind)) return undefined;
  let found: { file: string; type: string; custom: boolean };
  if (Object.hasOwn(CUSTOM_RESOURCE_PACKAGES, apiVersion)) {
    const root = dirname(require.resolve(`${CUSTOM_RESOURCE_PACKAGES[apiVersion]}/package.json`));
    found = { file: join(root, apiVersion, `${kind}.d.ts`), type: `I${kind}`, custom: true };
  } else {
    const [group, version] = apiVersion.includes("/") ? apiVersion.split("/", 2) : ["core", apiVersion];
    if (!/^[a-z0-9.-]+$/.test(group!) || !/^v[0-9a-z]+$/.test(version!)) return undefined;
    found = { file: join(TYPES, group!.split(".")[0]!, `${version}.d.ts`), type: kind, custom: false };
  }
  return existsSync(found.file) ? found : undefined;
}

const ajv = new Ajv({ allErrors: true, strict: false });
const compiled = new Map<string, ValidateFunction | string>();
// One TypeScript program per declaration file, whatever the kinds asked of it (the costly part).
const generators = new Map<string, SchemaGenerator>();
const generatorOf = ({ file, type, custom }: { file: string; type: string; custom: boolean }): SchemaGenerator => {
  const known = generators.get(file);
  if (known) return known;
  // A custom resource's types are inlined where they are used (none is recursive): its package
  // and kubernetes-models, whose types it uses, both name a type IConfigMapKeySelector (two
  // different ones), which shared definitions of every type would make one.
  const made = createGenerator({
    path: file,
    type: custom ? type : "*",
    additionalProperties: false,
    expose: custom ? "none" : "all",
    topRef: true,
    jsDoc: "none",
    skipTypeCheck: true,
  });
  generators.set(file, made);
  return made;
};

/** The validator of one kind of one apiVersion, or why there is none. */
function validatorOf(apiVersion: string, kind: string): ValidateFunction | string {
  const key = `${apiVersion} ${kind}`;
  const known = compiled.get(key);
  if (known) return known;
  const declaration = declarationOf(apiVersion, kind);
  let found: ValidateFunction | string = `no Kubernetes schema for apiVersion ${JSON.stringify(apiVersion)}, kind ${JSON.stringify(kind)} (a custom resource needs the package that declares its types here)`;
  if (declaration) {
    let schema: { definitions?: Record<string, { required?: string[]; properties?: Record<string, unknown> }> } | undefined;
    try {
      schema = generatorOf(declaration).createSchema(declaration.type) as typeof schema;
    } catch {
      // No such type in that group's version.
    }
    const root = schema?.definitions?.[declaration.type];
    // A kind of its own: an object that names its apiVersion and kind (the declarations' literal types).
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

/**
 * What each object's published validator refuses, one line per object as strictProblems: the
 * classes of kubernetes-models for the built-in kinds, of the package in CUSTOM_RESOURCE_PACKAGES
 * for a custom resource. They check the values the declarations do not carry (an enum, a
 * minimum, a quantity's or base64's format), and leave every object open: an unknown field is
 * strictProblems' to find.
 */
export async function modelProblems(objects: unknown[]): Promise<string[]> {
  const problems: string[] = [];
  for (const given of objects) {
    const o = structuredClone(given) as { apiVersion?: unknown; kind?: unknown; metadata?: { name?: unknown }; data?: Record<string, string> };
    const name = `${String(o?.kind)}/${String(o?.metadata?.name)}`;
    if (typeof o?.apiVersion !== "string" || typeof o.kind !== "string") {
      problems.push(`${name}: no apiVersion or kind`);
      continue;
    }
    // kustomize wraps a long Secret value's base64 over lines, which the API server's decoder
    // skips and the schema's "byte" format does not.
    if (o.apiVersion === "v1" && o.kind === "Secret" && o.data) for (const k of Object.keys(o.data)) o.data[k] = o.data[k]!.replace(/\s/g, "");
    const module = Object.hasOwn(CUSTOM_RESOURCE_PACKAGES, o.apiVersion) ? `${CUSTOM_RESOURCE_PACKAGES[o.apiVersion]}/${o.apiVersion}` : `kubernetes-models/${o.apiVersion}`;
    const Model = ((await import(module).catch(() => ({}))) as Record<string, new (o: unknown) => { validate(): void }>)[o.kind];
    if (typeof Model !== "function") {
      problems.push(`${name}: no model of apiVersion ${JSON.stringify(o.apiVersion)}, kind ${JSON.stringify(o.kind)}`);
      continue;
    }
    try {
      new Model(o).validate();
    } catch (err) {
      const errors = (err as { errors?: ErrorObject[] }).errors;
      problems.push(`${name}: ${errors ? [...new Set(errors.map(explain))].join("; ") : (err as Error).message}`);
    }
  }
  return problems;
}
