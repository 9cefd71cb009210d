import { readFile } from "node:fs/promises";
import { certificateFacts, type CertificateFacts, type ServedTls } from "./index.ts";

/** Within this many days of its end a certificate is warned about (Let's Encrypt renews 30 days ahead). */
export const EXPIRY_WARNING_DAYS = 14;

const DAY_MS = 86_400_000;

/**
 * What is wrong with the served certificate's validity at `now`, one sentence each: not valid yet
 * (a clock behind), expired, or ending within EXPIRY_WARNING_DAYS.
 */
export function validityWarnings(facts: CertificateFacts, now: Date, what: string): string[] {
  const at = (d: Date) => d.toISOString().replace(/\.\d+Z$/, "Z");
  // The generated certificate starts an hour back for clients behind; a little skew is not worth a word.
  if (facts.notBefore.getTime() > now.getTime() + 5 * 60_000) {
    return [`${what} is not valid before ${at(facts.notBefore)}: clients refuse it until then; check this machine's clock`];
  }
  const left = facts.notAfter.getTime() - now.getTime();
  if (left <= 0) return [`${what} expired on ${at(facts.notAfter)}: clients that check it refuse to connect; renew it and restart imgpress`];
  if (left < EXPIRY_WARNING_DAYS * DAY_MS) {
    const days = Math.floor(left / DAY_MS);
    return [`${what} expires ${days === 0 ? "within a day" : `in ${days} day${days === 1 ? "" : "s"}`} (${at(facts.notAfter)}): renew it and restart imgpress, which reads it at start only`];
  }
  return [];
}

/** How the served certificate is described in its warnings. */
export function describeServed(tls: Pick<ServedTls, "generated" | "certPath">): string {
  return tls.generated ? `the generated certificate (${tls.certPath})` : `the certificate in IMGPRESS_TLS_CERT (${tls.certPath})`;
}

/**
 * The warnings about the served certificate at `now`: its validity, and for the operator's files
 * whether the certificate on disk is no longer the one served (renewed, waiting for a restart).
 * `readCert` reads IMGPRESS_TLS_CERT's file as it is now.
 */
export async function certificateWarnings(tls: ServedTls, now: Date, readCert: () => Promise<string> = () => readFile(tls.certPath, "utf8")): Promise<string[]> {
  const warnings = tls.facts ? validityWarnings(tls.facts, now, describeServed(tls)) : [];
  if (tls.generated) return warnings;
  const onDisk = await readCert().catch((err: Error) => `unreadable: ${(err as NodeJS.ErrnoException).code ?? err.message}`);
  if (onDisk === tls.cert) return warnings;
  const facts = certificateFacts(onDisk);
  const until = facts ? ` (valid until ${facts.notAfter.toISOString().replace(/\.\d+Z$/, "Z")})` : onDisk.startsWith("unreadable: ") ? ` (${onDisk})` : " (it cannot be read as a certificate yet)";
  return [...warnings, `IMGPRESS_TLS_CERT (${tls.certPath}) has changed since imgpress started${until}: restart imgpress to serve it; until then the one read at start is served`];
}

/** Options of `certificateWatch`; the defaults are the server's. */
export interface WatchOptions {
  /** How long a warning that still holds stays unsaid (a day). */
  repeatMs?: number;
  now?: () => Date;
  readCert?: () => Promise<string>;
  /** Warnings the start-up lines already gave: they count as said at the first `now()`. */
  said?: string[];
  /** Told every check's warnings, whether logged now or not (the dashboard shows them). */
  checked?: (warnings: readonly string[]) => void;
}

/**
 * One check of the served certificate, to run on a timer: each warning is logged when it first
 * appears and again every `repeatMs` while it holds, so a renewal that was not followed by a
 * restart, or a certificate nearing its end, is said in the log before clients are refused.
 */
export function certificateWatch(tls: ServedTls, warn: (message: string) => void, { repeatMs = DAY_MS, now = () => new Date(), readCert, said = [], checked }: WatchOptions = {}): () => Promise<void> {
  const lastSaid = new Map<string, number>(said.map((message) => [message, now().getTime()]));
  return async () => {
    const at = now();
    const warnings = await certificateWarnings(tls, at, readCert);
    checked?.(warnings);
    for (const message of warnings) {
      const when = lastSaid.get(message);
      if (when === undefined || at.getTime() - when >= repeatMs) {
        warn(message);
        lastSaid.set(message, at.getTime());
      }
    }
    // A warning that no longer holds is forgotten, so it is said again at once should it return.
    for (const message of lastSaid.keys()) if (!warnings.includes(message)) lastSaid.delete(message);
  };
}

/** Runs `certificateWatch` every `everyMs` (an hour); returns the stop. */
export function watchCertificate(tls: ServedTls, warn: (message: string) => void, options: WatchOptions & { everyMs?: number } = {}): () => void {
  const check = certificateWatch(tls, warn, options);
  let checking: Promise<void> | null = null;
  const timer = setInterval(() => {
    checking ??= check().finally(() => (checking = null));
  }, options.everyMs ?? 60 * 60_000);
  return () => clearInterval(timer);
}
