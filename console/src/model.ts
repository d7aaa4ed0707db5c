// What the console knows of the API: every kind of the proto catalog, as console/catalog.ts
// derives it at build time (the browser never reads proto files). Nothing in the console's
// pages names a kind; they read these.

export type FieldType = "string" | "integer" | "int64" | "number" | "boolean" | "enum" | "json";

export interface ConsoleField {
  name: string;
  /** As a person reads it: "adminStateUp" -> "Admin state up". */
  label: string;
  type: FieldType;
  repeated: boolean;
  required: boolean;
  /** Sent on create only (IMMUTABLE). */
  createOnly: boolean;
  /** Shown, never sent (OUTPUT_ONLY, and the gateway's links). */
  readOnly: boolean;
  /** Sent, never shown back (a password). */
  writeOnly: boolean;
  enumValues?: string[];
  /** What the service stores when the body leaves the field out. */
  default?: unknown;
  /** A link the gateway fills (an absolute URL). */
  link: boolean;
  /**
   * The kind whose item this field holds the id of (a port's peerId: "routing.Port"), or a
   * repeated field the ids of (a rule's inPorts): a picker (of several) in forms, a link (a list
   * of links) on an item's page. From the message's link to it (`peer` is "/ports/{peerId}"),
   * else from the field's name ending in a top-level kind's name (nextHopPort, portId;
   * inboundMirrorIds, inPorts).
   */
  ref?: string;
}

/** A collection an item links to that is not a kind of its own (a VTEP's ports). */
export interface LinkedList {
  title: string;
  template: string;
  /** The kind of its items, when they are items of a kind (a load balancer's pools: "lb.Pool"). */
  kind?: string;
}

export interface ConsoleKind {
  /** "bridge.Bridge". */
  kind: string;
  /** The media type name without version, as /events names the kind ("Bridge", "VTEP"). */
  eventName: string;
  /** "Bridge", "DHCP subnet", "VTEP". */
  singular: string;
  /** "Bridges", "DHCP subnets", "VTEPs". */
  plural: string;
  /** "" for the main root document, else its name ("compat"). */
  group: string;
  /** Only administrators may use it. */
  adminOnly: boolean;
  tenantField?: string;
  /** The kind it lives under ("bridge.Bridge" for a DHCP subnet). */
  parent?: string;
  /** Kinds whose items live directly under this kind's items. */
  children: string[];
  /** Every kind that goes when an item of this one is deleted (children, theirs, ...). */
  cascades: string[];
  itemTemplate: string;
  /** The path variable naming one item in the item template ("id", "subnetAddr"). */
  key: string;
  /** List and create paths (a kind may be listed at several). */
  listTemplates: string[];
  createTemplates: string[];
  canUpdate: boolean;
  canDelete: boolean;
  /** Query parameters the list accepts. */
  listQuery: string[];
  /** The fields the list filters by equality (`?name=blue`), from the gateway's rule. */
  filters: string[];
  fields: ConsoleField[];
  /** Field names shown as list columns, the ones that matter first. */
  columns: string[];
  /** The field naming an item to a person (its name), if any. */
  nameField?: string;
  linkedLists: LinkedList[];
  /** For each variable of the create paths that names an item of a kind (routerId in /routers/{routerId}/ports): that kind. */
  pathRefs: Record<string, string>;
  /**
   * A kind whose items take different fields by one field's value (a rule's type), as its
   * service declares it: that field, and each value's own fields. A form shows the chosen value's only.
   */
  variants?: { field: string; fields: Record<string, string[]> };
  /** Fields a form shows together under a title (a rule's match conditions), as the service declares them. */
  groups: { title: string; fields: string[] }[];
}

export interface ConsoleCatalog {
  kinds: ConsoleKind[];
  /** Root document names besides the main one, with a heading each. */
  groups: { name: string; title: string }[];
}
