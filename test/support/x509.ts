/** Reads a PEM certificate with `node:crypto` X509Certificate into plain values (the same under Bun, Deno and Node). */
import { X509Certificate } from "node:crypto";

/** What the certificate tests look at: subject, SAN entries, validity, key type, and the self-signature. */
export interface CertificateSummary {
  subject: string;
  issuer: string;
  subjectAltName: string[];
  validFrom: string;
  validTo: string;
  keyType: string | undefined;
  curve: string | undefined;
  ca: boolean;
  /** The signature verifies with the certificate's own public key. */
  signedBySelf: boolean;
  checksHost: Record<string, boolean>;
  checksIp: Record<string, boolean>;
}

/** Parses `pem` and checks it against `hosts` and `ips` (as a TLS client would). */
export function summarize(pem: string, hosts: string[], ips: string[]): CertificateSummary {
  const cert = new X509Certificate(pem);
  const details = cert.publicKey.asymmetricKeyDetails as { namedCurve?: string } | undefined;
  return {
    subject: cert.subject,
    issuer: cert.issuer,
    // OpenSSL (Bun, Node) prints IPv6 entries uncompressed, Deno compressed: compress them alike.
    subjectAltName: (cert.subjectAltName ?? "")
      .split(", ")
      .filter(Boolean)
      .map((e) => e.replace(/^IP Address:0:0:0:0:0:0:0:1$/, "IP Address:::1")),
    validFrom: new Date(cert.validFrom).toISOString(),
    validTo: new Date(cert.validTo).toISOString(),
    keyType: cert.publicKey.asymmetricKeyType,
    curve: details?.namedCurve,
    ca: cert.ca,
    signedBySelf: cert.verify(cert.publicKey),
    checksHost: Object.fromEntries(hosts.map((h) => [h, cert.checkHost(h) === h])),
    checksIp: Object.fromEntries(ips.map((ip) => [ip, cert.checkIP(ip) === ip])),
  };
}
