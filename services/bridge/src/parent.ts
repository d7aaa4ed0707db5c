// The bridge a child resource lives under.
import { ApiError, type Queryable } from "@vnm/kit";

export interface ParentBridge {
  id: string;
  tenantId: string | null;
}

export const bridgeNotFound = (id: string) => ApiError.notFound(`There is no Bridge with ID ${id}.`);

/**
 * Reads the bridge (404 when missing). In a transaction, "share" keeps the bridge from being
 * deleted until the caller commits; "update" is for changing or deleting the bridge itself.
 */
export async function requireBridge(q: Queryable, id: string, lock?: "share" | "update"): Promise<ParentBridge> {
  const r = await q.query<{ tenant_id: string | null }>(
    `SELECT tenant_id FROM bridges WHERE id = $1${lock ? ` FOR ${lock.toUpperCase()}` : ""}`,
    [id],
  );
  const row = r.rows[0];
  if (!row) throw bridgeNotFound(id);
  return { id, tenantId: row.tenant_id };
}
