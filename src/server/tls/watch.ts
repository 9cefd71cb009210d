import { readFile } from "node:fs/promises";
import { DAY_MS } from "../../core/durations.ts";
import {
  type CertificateFacts,
  certificateFacts,
  certificateFingerprint,
  isoSeconds,
  keyFits,
  notValidAt,
  type ServedTls,
} from "./index.ts";
import { coversName, isWildcard } from "./names.ts";

/** Within this many days of its end a certificate is warned about (Let's Encrypt renews 30 days ahead). */
export const EXPIRY_WARNING_DAYS = 14;

/**
 * What is wrong with the served certificate's validity at `now`, one sentence each: not valid yet
 * (a clock behind), expired, ending within EXPIRY_WARNING_DAYS, and the same of an intermediate in
 * the file that ends first. `generated`: the self-signed pair, which a restart replaces by itself
 * once it nears its end.
 */
export function validityWarnings(facts: CertificateFacts, now: Date, what: string, generated = false): string[] {
  // The generated certificate starts an hour back for clients behind; a little skew is not worth a word.
  if (notValidAt(facts, now) === "not yet") {
    // Kept rather than replaced: at start the clock is the likelier fault (a NAS before its time sync).
    const fix = generated
      ? "if this machine's clock is right, stop imgpress and delete tls/self-signed.pem: the next start makes a new one (clients need the new cert.pem)"
      : "check this machine's clock";
    return [`${what} is not valid before ${isoSeconds(facts.notBefore)}: clients refuse it until then; ${fix}`];
  }
  const fix = generated
    ? "restart imgpress, which then makes a new one (clients need the new cert.pem)"
    : "renew it and restart imgpress, which reads it at start only";
  const ending = (end: Date) => {
    const left = end.getTime() - now.getTime();
    if (left <= 0) return `expired on ${isoSeconds(end)}`;
    if (left >= EXPIRY_WARNING_DAYS * DAY_MS) return null;
    const days = Math.round(left / DAY_MS);
    return `expires ${left < DAY_MS ? "within a day" : `in ${days} day${days === 1 ? "" : "s"}`} (${isoSeconds(end)})`;
  };
  const own = ending(facts.notAfter);
  const warnings = own
    ? [`${what} ${own}: ${own.startsWith("expired") ? "clients that check it refuse to connect; " : ""}${fix}`]
    : [];
  const intermediate = facts.intermediateEnds && ending(facts.intermediateEnds);
  if (intermediate) {
    warnings.push(
      `${what} comes with an intermediate certificate that ${intermediate}: clients that build the chain through it refuse the server (an extra cross-signed one that clients skip does no harm); renew the chain and restart imgpress`,
    );
  }
  return warnings;
}

/** How the served certificate is described in its warnings. */
export function describeServed(tls: Pick<ServedTls, "generated" | "certPath">): string {
  return tls.generated
    ? `the generated certificate (${tls.certPath})`
    : `the certificate in IMGPRESS_TLS_CERT (${tls.certPath})`;
}

/**
 * What is wrong with the served certificate itself at `now`, whatever its files hold since: its
 * validity, a chain clients cannot complete, and (the operator's, which holds its own names) that it
 * lacks `host`, the address the server listens on.
 */
export function servedWarnings(tls: ServedTls, now: Date, host?: string): string[] {
  if (!tls.facts) return [];
  const what = describeServed(tls);
  const warnings = validityWarnings(tls.facts, now, what, tls.generated);
  if (tls.facts.missingIssuer) {
    warnings.push(
      `${what} comes without the certificate that issued it (${tls.facts.missingIssuer}): clients that do not already hold that one (PHP cURL, curl and most programs; browsers may fetch it) refuse the server ("unable to get local issuer certificate" in curl and PHP, "unable to verify the first certificate" in Node); put the whole chain in the file, the server's certificate first, then its intermediates (certbot: fullchain.pem, not cert.pem), and restart imgpress (nothing is missing if that issuer is a private CA's root installed on every client)`,
    );
  }
  if (!tls.generated && host && !isWildcard(host) && !coversName(tls.facts.names, host)) {
    warnings.push(
      `${what} does not hold IMGPRESS_HOST (${host}) among its names (${tls.facts.names.join(", ")}): clients that connect by that address refuse it`,
    );
  }
  return warnings;
}

/** How `certificateWarnings` reads the operator's files and what it checks them against. */
export interface WarningOptions {
  /** Reads a file as it is now (the certificate and key files). */
  read?: (path: string) => Promise<string>;
  /** The address the server listens on (IMGPRESS_HOST). */
  host?: string;
}

/**
 * The warnings about the served certificate at `now`: `servedWarnings`, and for the operator's
 * files whether they still hold the served certificate and its key, and if not, whether a restart
 * would serve them or fail (unreadable, no certificate or key, not a pair, not valid now).
 */
export async function certificateWarnings(
  tls: ServedTls,
  now: Date,
  { read = (path) => readFile(path, "utf8"), host }: WarningOptions = {},
): Promise<string[]> {
  const warnings = servedWarnings(tls, now, host);
  if (tls.generated) return warnings;
  const change = await changeOnDisk(tls, now, read);
  return change ? [...warnings, change] : warnings;
}

// What a restart would do with IMGPRESS_TLS_CERT and IMGPRESS_TLS_KEY as they are now, or null while
// they hold the served pair (rewritten with other line ends or blank lines included).
async function changeOnDisk(
  tls: ServedTls,
  now: Date,
  read: (path: string) => Promise<string>,
): Promise<string | null> {
  const file = `IMGPRESS_TLS_CERT (${tls.certPath})`;
  const keyFile = `IMGPRESS_TLS_KEY (${tls.keyPath})`;
  const kept = "the certificate read at start is still served";
  const unreadable = (err: NodeJS.ErrnoException) => new Error(err.code ?? err.message);
  const [cert, key] = await Promise.all([
    read(tls.certPath).catch(unreadable),
    tls.keyPath ? read(tls.keyPath).catch(unreadable) : new Error("not set"),
  ]);
  if (cert instanceof Error) return `${file} cannot be read now (${cert.message}): a restart would fail; ${kept}`;
  const facts = certificateFacts(cert);
  if (!facts) return `${file} holds no certificate that can be read now: a restart would fail; ${kept}`;
  const changed = (await certificateFingerprint(cert)) !== (await certificateFingerprint(tls.cert));
  const what = changed ? `${file} has changed (valid until ${isoSeconds(facts.notAfter)}), but ` : "";
  if (key instanceof Error)
    return `${what}${keyFile} cannot be read now (${key.message}): a restart would fail; ${kept}`;
  const fits = keyFits(cert, key);
  if (fits === null)
    return `${what}${keyFile} holds no private key that can be read now: a restart would fail; ${kept}`;
  if (!fits) {
    return `${what}${keyFile} is not the private key of the certificate that comes first in ${file} (the server's certificate first, then the intermediates): a restart would fail; ${kept}`;
  }
  if (!changed) return null;
  if (notValidAt(facts, now)) {
    return `${file} has changed, but the new certificate is not valid now (valid from ${isoSeconds(facts.notBefore)} until ${isoSeconds(facts.notAfter)}): a restart would serve it and clients would refuse it; ${kept}`;
  }
  return `${file} has changed since imgpress started (valid until ${isoSeconds(facts.notAfter)}): restart imgpress to serve it; until then ${kept}`;
}

/** Options of `certificateCheck`; the defaults are the server's. */
export interface WatchOptions extends WarningOptions {
  /** How long a warning that still holds stays unsaid (a day). */
  repeatMs?: number;
  now?: () => Date;
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
export function certificateCheck(
  tls: ServedTls,
  warn: (message: string) => void,
  { repeatMs = DAY_MS, now = () => new Date(), said = [], checked, ...warningOptions }: WatchOptions = {},
): () => Promise<void> {
  const lastSaid = new Map<string, number>(said.map((message) => [message, now().getTime()]));
  return async () => {
    const time = now();
    const warnings = await certificateWarnings(tls, time, warningOptions);
    checked?.(warnings);
    for (const message of warnings) {
      const when = lastSaid.get(message);
      if (when === undefined || time.getTime() - when >= repeatMs) {
        warn(message);
        lastSaid.set(message, time.getTime());
      }
    }
    // A warning that no longer holds is forgotten, so it is said again at once should it return.
    for (const message of lastSaid.keys()) if (!warnings.includes(message)) lastSaid.delete(message);
  };
}

/** Runs `certificateCheck` every `everyMs` (an hour); returns the stop. */
export function watchCertificate(
  tls: ServedTls,
  warn: (message: string) => void,
  options: WatchOptions & { everyMs?: number } = {},
): () => void {
  const check = certificateCheck(tls, warn, options);
  let checking: Promise<void> | null = null;
  const timer = setInterval(
    () => {
      checking ??= check().finally(() => (checking = null));
    },
    options.everyMs ?? 60 * 60_000,
  );
  return () => clearInterval(timer);
}
