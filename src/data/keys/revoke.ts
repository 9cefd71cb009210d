import type { AuditLog } from "../audit/service.ts";
import type { KeyService, RecordRevoked } from "./service.ts";

/** Revocation as operators do it: the key stops working at its next request, and the audit trail says who did it. */
export class KeyRevocation {
  constructor(
    private readonly keys: KeyService,
    private readonly audit: AuditLog,
  ) {}

  /** Revokes key `id`; `by` is "cli" or the staff address. False when no active key has that id. */
  async revoke(id: string, by: string, clientAddress = ""): Promise<boolean> {
    return this.keys.revoke(id, this.recordRevoked(by, clientAddress));
  }

  /** Revokes every active key of `email`, one audit event per key; returns their ids. */
  async revokeAllOf(email: string, by: string, clientAddress = ""): Promise<string[]> {
    return this.keys.revokeAllOf(email, this.recordRevoked(by, clientAddress));
  }

  /** The address key `id` belongs to, so its page can revoke every key of that address; null when unknown. */
  ownerOf(id: string): Promise<string | null> {
    return this.keys.ownerOf(id);
  }

  // The events are written in the revocation's own transaction: a crash keeps both or neither.
  private recordRevoked(by: string, clientAddress: string): RecordRevoked {
    return (db, ids) =>
      this.audit.insert(
        db,
        ids.map((id) => ({ type: "key.revoked" as const, actor: by, subject: id, clientAddress })),
      );
  }
}
