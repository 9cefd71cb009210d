import type { AuditLog } from "../audit/service.ts";
import type { KeyService } from "./service.ts";

/** Revocation as operators do it: the key stops working at its next request, and the audit trail says who did it. */
export class KeyRevocation {
  constructor(
    private readonly keys: KeyService,
    private readonly audit: AuditLog,
  ) {}

  /** Revokes key `id`; `by` is "cli" or the staff address. False when no active key has that id. */
  async revoke(id: string, by: string, clientAddress = ""): Promise<boolean> {
    const done = await this.keys.revoke(id);
    if (done) await this.audit.record({ type: "key.revoked", actor: by, subject: id, clientAddress });
    return done;
  }

  /** Revokes every active key of `email`, one audit event per key; returns their ids. */
  async revokeAllOf(email: string, by: string, clientAddress = ""): Promise<string[]> {
    const ids = await this.keys.revokeAllOf(email);
    for (const id of ids) await this.audit.record({ type: "key.revoked", actor: by, subject: id, clientAddress });
    return ids;
  }
}
