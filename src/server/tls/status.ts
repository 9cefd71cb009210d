import { certificateFingerprint, type ServedTls } from "./index.ts";

/** What the dashboard shows of the certificate this process serves. */
export interface TlsView {
  /** `generated`: the self-signed pair in the data folder; `file`: IMGPRESS_TLS_CERT; `proxy`: the proxy in front terminates TLS. */
  source: "generated" | "file" | "proxy";
  certPath?: string;
  /** ISO time; absent when the certificate could not be read. */
  validUntil?: string;
  /** ISO time an intermediate in the file ends, when before `validUntil`. */
  intermediateEnds?: string;
  names?: readonly string[];
  /** SHA-256 of the certificate, colon-separated hex (as the listening line and openssl print it). */
  sha256?: string;
  /** The certificate watch's current warnings (expiring, renewed file waiting for a restart). */
  warnings: readonly string[];
}

/**
 * The certificate this process serves, as the runtime edge learns it once listening and the hourly
 * watch keeps it current; empty in processes that do not listen (commands, in-process tests).
 */
export class TlsStatus {
  private current: TlsView | null = null;

  /** Records the served certificate (or, behind a proxy, that there is none here). */
  async serving(tls: ServedTls | undefined, warnings: readonly string[]): Promise<void> {
    this.current = tls
      ? {
          source: tls.generated ? "generated" : "file",
          certPath: tls.certPath,
          ...(tls.facts ? { validUntil: tls.facts.notAfter.toISOString(), names: tls.facts.names } : {}),
          ...(tls.facts?.intermediateEnds ? { intermediateEnds: tls.facts.intermediateEnds.toISOString() } : {}),
          sha256: await certificateFingerprint(tls.cert),
          warnings,
        }
      : { source: "proxy", warnings: [] };
  }

  /** Replaces the warnings with the watch's latest ones. */
  warn(warnings: readonly string[]): void {
    if (this.current) this.current = { ...this.current, warnings };
  }

  /** The certificate as last recorded, or null before listening. */
  view(): TlsView | null {
    return this.current;
  }
}
