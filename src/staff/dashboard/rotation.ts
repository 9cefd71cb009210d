import type { AuditLog } from "../../data/audit/service.ts";

/** How a key stands in its line of rotations: the key a new code put in its place, and the keys it replaced. */
export interface KeyRotation {
  replacedBy: string | null;
  replaces: string[];
}

/**
 * Reads a key's rotations from the audit trail: its `key.revoked` event names its successor
 * (`replacedBy`) and its `key.issued` event the keys it replaced (`replaces`). Events pruned by the
 * retention leave nothing to show.
 */
export async function keyRotation(audit: Pick<AuditLog, "list">, id: string): Promise<KeyRotation> {
  const [revoked, issued] = await Promise.all([
    audit.list({ type: "key.revoked", subject: id, limit: 1 }),
    audit.list({ type: "key.issued", subject: id, limit: 1 }),
  ]);
  const successor = revoked[0]?.detail.replacedBy;
  const predecessors = issued[0]?.detail.replaces;
  return {
    replacedBy: typeof successor === "string" ? successor : null,
    replaces: Array.isArray(predecessors) ? predecessors.filter((p): p is string => typeof p === "string") : [],
  };
}
