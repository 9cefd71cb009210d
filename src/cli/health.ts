import { readFile } from "node:fs/promises";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { rootCertificates } from "node:tls";
import { loadConfig } from "../core/config.ts";
import { isLoopbackHost } from "../core/ipallow.ts";
import { redactUrl } from "../core/redact.ts";
import { servedCertificatePath, urlHost } from "../server/tls/index.ts";
import { isWildcard } from "../server/tls/names.ts";
import { UsageError } from "./args.ts";
import type { Output } from "./backup.ts";

/**
 * How long the probe waits for an answer before reporting failure: past the 5 s a PostgreSQL
 * server that does not answer makes readiness wait (a locked database: 0.5 s), so the answer
 * names the failing check.
 */
const PROBE_TIMEOUT_MS = 8000;

/**
 * `imgpress health [--url URL] [--json]`: asks a running instance's /health/ready and exits 0 when it
 * answers 200 (the answer on stdout), 1 otherwise (the reason on stderr; with --json one object on
 * stdout either way), for container health checks. Without --url it probes this host on the
 * configured port. Certificate verification is skipped for loopback addresses only: the probe sends
 * nothing secret and reads only a status, and a self-signed or public certificate never names
 * 127.0.0.1 reliably; any other address is verified against the system's CAs and the certificate
 * this configuration serves. A plain-HTTP URL (an instance behind
 * a TLS proxy) is sent `X-Forwarded-Proto: https`, as the proxy would, or the HTTPS guard answers 403.
 */
export async function runHealthCommand(
  flags: Record<string, string>,
  env: Record<string, string | undefined>,
  io: Output,
): Promise<number> {
  const raw = flags.url ?? defaultUrl(env, flags);
  const url = URL.parse(raw);
  if (!url)
    throw new UsageError(
      `${flags.url ? "--url" : "the address from IMGPRESS_HOST and IMGPRESS_PORT"} is not a URL: ${redactUrl(raw)}`,
    );
  const shownUrl = redactUrl(url.href);
  const json = flags.json === "true";
  try {
    const { status, body } = await probe(url, await servedCertificate(env, flags));
    const ready = status === 200;
    if (json) io.out(JSON.stringify({ url: shownUrl, ready, status, body: parsedBody(body) }));
    else (ready ? io.out : io.err)(`${status} ${body.trim()}`);
    return ready ? 0 : 1;
  } catch (err) {
    const error = (err as Error).message;
    if (json) io.out(JSON.stringify({ url: shownUrl, ready: false, error }));
    else io.err(`unreachable: ${shownUrl}: ${error}`);
    return 1;
  }
}

// The readiness answer is JSON; anything else (a proxy's HTML page) is kept as text.
function parsedBody(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return body;
  }
}

function defaultUrl(env: Record<string, string | undefined>, flags: Record<string, string>): string {
  const config = loadConfig(env, flags);
  // Port 0 lets the server pick one; a probe of port 0 would go to 443, perhaps another service.
  if (config.port === 0)
    throw new UsageError("IMGPRESS_PORT is 0 (any free port): give the server's address with --url");
  const host = isWildcard(config.host) ? "127.0.0.1" : urlHost(config.host);
  return `${config.behindProxy ? "http" : "https"}://${host}:${config.port}/health/ready`;
}

// The certificate this configuration serves (the data folder's self-signed one, or IMGPRESS_TLS_CERT),
// trusted besides the system's CAs: the probe of a LAN address then passes without installing it
// system-wide. Null when this user cannot read it, or the configuration cannot be read.
async function servedCertificate(
  env: Record<string, string | undefined>,
  flags: Record<string, string>,
): Promise<string | null> {
  try {
    const config = loadConfig(env, flags);
    return await readFile(servedCertificatePath(config), "utf8");
  } catch {
    return null;
  }
}

function probe(url: URL, ownCertificate: string | null): Promise<{ status: number; body: string }> {
  const send = url.protocol === "http:" ? httpRequest : httpsRequest;
  return new Promise((resolve, reject) => {
    const headers = url.protocol === "http:" ? { "x-forwarded-proto": "https" } : {};
    const req = send(
      url.href,
      {
        method: "GET",
        headers,
        timeout: PROBE_TIMEOUT_MS,
        rejectUnauthorized: !isLoopbackHost(url.hostname),
        ...(ownCertificate ? { ca: [...rootCertificates, ownCertificate] } : {}),
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (body += chunk.slice(0, 4096 - body.length)));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error(`no answer within ${PROBE_TIMEOUT_MS} ms`)));
    req.on("error", reject);
    req.end();
  });
}
