// The schemas of the custom resources the manifests use, written here for the fields vnm sets
// (the facts are the operators' documented API; a field not listed is refused, like any unknown
// field of a built-in kind: add it here, with its type, when a manifest starts using it). Fields
// of Kubernetes types inside them (metadata, resources) are checked against kubernetes-types,
// as the built-in kinds are (k8s-schema.ts): `kubernetesType("ObjectMeta")`.

/** The Kubernetes API types a custom resource's schema refers to, and the declaration file each is in. */
export const KUBERNETES_TYPES = { ObjectMeta: "meta/v1", ResourceRequirements: "core/v1" } as const;
export type KubernetesType = keyof typeof KUBERNETES_TYPES;

/** The id under which k8s-schema.ts registers a Kubernetes type's schema. */
export const kubernetesTypeId = (type: KubernetesType) => `kubernetes-types:${KUBERNETES_TYPES[type]}/${type}`;
const kubernetesType = (type: KubernetesType) => ({ $ref: kubernetesTypeId(type) });

/** An object of exactly these properties (none other), some of them required. */
const closed = (properties: Record<string, object>, required: string[] = []) => ({ type: "object", additionalProperties: false, properties, required });
const string = { type: "string" };
const boolean = { type: "boolean" };
const labelMap = { type: "object", additionalProperties: string };
const oneOf = (...values: string[]) => ({ type: "string", enum: values });
/** A reference to a Secret in the resource's namespace. */
const secretName = closed({ name: string }, ["name"]);

/**
 * CloudNativePG's Cluster (postgresql.cnpg.io/v1, operator 1.25 or later): a PostgreSQL primary
 * and its streaming standbys, failed over by the operator.
 */
const cnpgCluster = closed(
  {
    apiVersion: { const: "postgresql.cnpg.io/v1" },
    kind: { const: "Cluster" },
    metadata: kubernetesType("ObjectMeta"),
    spec: closed(
      {
        /** Instances: one primary, the rest standbys. */
        instances: { type: "integer", minimum: 1 },
        /** The PostgreSQL operand image. */
        imageName: string,
        /** Labels and annotations put on every object the operator makes for the cluster (pods, Services, volumes). */
        inheritedMetadata: closed({ labels: labelMap, annotations: labelMap }),
        bootstrap: closed({
          /**
           * A new, empty cluster: the application database and its owner (with that owner's
           * password from a basic-auth Secret whose username is the owner, or one the operator
           * generates into `<cluster>-app`); SQL run as the superuser once it is made (in the
           * `postgres` database, or in the application database).
           */
          initdb: closed({ database: string, owner: string, secret: secretName, postInitSQL: { type: "array", items: string }, postInitApplicationSQL: { type: "array", items: string } }),
        }),
        /** Whether the `postgres` superuser may log in over the network (with a password the operator keeps in `<cluster>-superuser`). */
        enableSuperuserAccess: boolean,
        postgresql: closed({
          parameters: labelMap,
          /** Quorum (`any`) or priority (`first`) synchronous replication to `number` standbys; `required` blocks commits rather than go on without them. */
          synchronous: closed({ method: oneOf("any", "first"), number: { type: "integer", minimum: 1 }, dataDurability: oneOf("required", "preferred") }, ["method", "number"]),
        }),
        /** After the standbys are updated, the primary: by itself (`unsupervised`) or when an operator asks (`supervised`). */
        primaryUpdateStrategy: oneOf("unsupervised", "supervised"),
        primaryUpdateMethod: oneOf("switchover", "restart"),
        affinity: closed({
          enablePodAntiAffinity: boolean,
          topologyKey: string,
          podAntiAffinityType: oneOf("preferred", "required"),
          nodeSelector: labelMap,
        }),
        /** The operator's PodDisruptionBudgets for the primary and the standbys. */
        enablePDB: boolean,
        storage: closed({ size: string, storageClass: string, resizeInUseVolumes: boolean }),
        resources: kubernetesType("ResourceRequirements"),
        /** Seconds the operator waits before failing over an unready primary. */
        failoverDelay: { type: "integer", minimum: 0 },
      },
      ["instances"],
    ),
  },
  ["apiVersion", "kind", "metadata", "spec"],
);

/** The schema of each custom resource, by "<apiVersion> <kind>". */
export const CUSTOM_RESOURCE_SCHEMAS: Record<string, object> = {
  "postgresql.cnpg.io/v1 Cluster": cnpgCluster,
};
