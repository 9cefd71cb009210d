/**
 * The reverse-proxy recipes of deploy/proxy/, run for real: Debian's nginx and Caddy, each on its
 * recipe file with only the listen address, the certificate paths and the upstream port replaced,
 * in front of one imgpress started with IMGPRESS_BEHIND_PROXY=true. Through each: a ~20 MB upload
 * converts, an image over the limit gets imgpress's JSON 413 (not the proxy's HTML), the client's
 * address reaches the audit trail from X-Forwarded-For, and X-Forwarded-Proto lets requests in.
 * A proxy that leaves X-Forwarded-Proto out is told so by name.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import sharp from "sharp";
import { MISSING_PROTO_MESSAGE } from "../../src/core/http/guards.ts";
import { selfSignedCertificate } from "../../src/server/tls/selfsigned.ts";
import { type Caddy, startCaddy } from "../support/caddy.ts";
import { photo } from "../support/images.ts";
import { Client } from "../support/imgpress.ts";
import { type Nginx, startNginx } from "../support/nginx.ts";
import { unusedPorts } from "../support/ports.ts";
import { ROOT, type RunningServer, runCli, startServer } from "../support/server.ts";
import { type SmtpSink, startSmtpSink } from "../support/smtp.ts";

const NGINX_RECIPE = join(ROOT, "deploy/proxy/nginx.conf");
const CADDY_RECIPE = join(ROOT, "deploy/proxy/Caddyfile");
const CERT = "/etc/ssl/imgpress/fullchain.pem";
const KEY = "/etc/ssl/imgpress/privkey.pem";
const MiB = 1024 * 1024;

let sink: SmtpSink;
let server: RunningServer;
let nginx: Nginx | undefined;
let minimal: Nginx | undefined;
let caddy: Caddy | undefined;
let tlsCert: string;
const proxies: Record<"nginx" | "caddy", Client> = {} as never;
let minimalClient: Client;

/** The recipe with each `[from, to]` replaced; each `from` must occur exactly once, so an edit that breaks the test's reading fails loudly. */
function templated(file: string, replacements: [string, string][]): string {
  let text = readFileSync(file, "utf8");
  for (const [from, to] of replacements) {
    const count = text.split(from).length - 1;
    if (count !== 1) throw new Error(`${file}: expected "${from}" exactly once, found it ${count} times`);
    text = text.replace(from, to);
  }
  return text;
}

function writeCertificate(dir: string, tls: { cert: string; key: string }): { cert: string; key: string } {
  writeFileSync(join(dir, "cert.pem"), tls.cert);
  writeFileSync(join(dir, "key.pem"), tls.key, { mode: 0o600 });
  return { cert: join(dir, "cert.pem"), key: join(dir, "key.pem") };
}

beforeAll(async () => {
  const [tls, ports, smtp] = await Promise.all([
    selfSignedCertificate(["localhost", "127.0.0.1"], 2),
    unusedPorts(3),
    startSmtpSink(),
  ]);
  sink = smtp;
  tlsCert = tls.cert;
  server = await startServer({ env: { IMGPRESS_BEHIND_PROXY: "true", IMGPRESS_SMTP_URL: sink.url } });
  const upstream = `127.0.0.1:${server.port}`;
  const nginxSite = (dir: string, port: number, drop: string[] = []) => {
    const files = writeCertificate(dir, tls);
    let text = templated(NGINX_RECIPE, [
      ["listen 443 ssl;", `listen 127.0.0.1:${port} ssl;`],
      [CERT, files.cert],
      [KEY, files.key],
      ["127.0.0.1:8080", upstream],
    ]);
    for (const line of drop) {
      if (!text.includes(line)) throw new Error(`${NGINX_RECIPE}: no "${line}" to leave out`);
      text = text.replace(line, "");
    }
    return text;
  };
  nginx = await startNginx((dir) => nginxSite(dir, ports[0]!));
  // A minimal proxy: the recipe without its X-Forwarded-Proto line.
  minimal = await startNginx((dir) => nginxSite(dir, ports[1]!, ["proxy_set_header X-Forwarded-Proto $scheme;"]));
  caddy = await startCaddy((dir) => {
    const files = writeCertificate(dir, tls);
    return templated(CADDY_RECIPE, [
      ["images.example.com {", `https://127.0.0.1:${ports[2]} {`],
      [`${CERT} ${KEY}`, `${files.cert} ${files.key}`],
      ["127.0.0.1:8080", upstream],
    ]);
  }, ports[2]!);
  // A client that writes its own X-Forwarded-For, which the proxies must not let it choose.
  const spoof = { "x-forwarded-for": "203.0.113.7" };
  proxies.nginx = new Client(`https://127.0.0.1:${ports[0]}`, tls.cert, 120_000, spoof);
  proxies.caddy = new Client(`https://127.0.0.1:${ports[2]}`, tls.cert, 120_000, spoof);
  minimalClient = new Client(`https://127.0.0.1:${ports[1]}`, tls.cert, 30_000);
}, 60_000);

afterAll(async () => {
  await Promise.all([nginx?.stop(), minimal?.stop(), caddy?.stop()]);
  await server?.stop();
  await sink?.close();
}, 30_000);

/** A real JPEG of `size` bytes: a small photo with COM segments before its image data, which a decoder skips in no time. */
async function paddedJpeg(size: number): Promise<Buffer> {
  const small = await photo(64, 48);
  const parts: Uint8Array[] = [small.subarray(0, 2)];
  let total = small.length;
  while (total < size) {
    const payload = Math.min(65533, size - total - 4);
    if (payload < 1) break;
    const segment = new Uint8Array(payload + 4);
    segment.set([0xff, 0xfe, (payload + 2) >> 8, (payload + 2) & 0xff]);
    parts.push(segment);
    total += segment.length;
  }
  parts.push(small.subarray(2));
  return Buffer.concat(parts);
}

function convert(client: Client, apiKey: string, image: Buffer): Promise<Response> {
  const form = new FormData();
  form.set("image", new Blob([new Uint8Array(image)], { type: "image/jpeg" }), "big.jpg");
  form.set("format", "webp");
  return client.fetch("/v1/plugin/convert", {
    method: "POST",
    headers: { authorization: `Bearer ${apiKey}` },
    body: form,
  });
}

describe.each(["nginx", "caddy"] as const)("behind %s (deploy/proxy recipe)", (name) => {
  let apiKey: string;

  test("keys obtained through it are issued to the client's address as the proxy saw it, not the one the client wrote", async () => {
    const email = `${name}@example.com`;
    const keys = await proxies[name].obtainKeys(sink, email);
    apiKey = keys.apiKey;
    const audit = await runCli(["audit", "--type", "key.issued", "--json"], server.env);
    const event = (JSON.parse(audit.stdout) as { actor: string; clientAddress: string }[]).find(
      (e) => e.actor === email,
    );
    expect(event?.clientAddress).toBe("127.0.0.1");
  }, 60_000);

  test("a ~20 MB upload goes through and converts", async () => {
    const image = await paddedJpeg(20 * MiB - 8 * 1024);
    expect(image.length).toBeGreaterThan(20_000_000);
    const res = await convert(proxies[name], apiKey, image);
    expect(res.status).toBe(200);
    const meta = await sharp(Buffer.from(await res.arrayBuffer())).metadata();
    expect({ format: meta.format, width: meta.width, height: meta.height }).toEqual({
      format: "webp",
      width: 64,
      height: 48,
    });
  }, 120_000);

  test("an image just over 20 MiB is answered by imgpress, in JSON (the proxy lets the body through)", async () => {
    const res = await convert(proxies[name], apiKey, await paddedJpeg(20 * MiB + 16 * 1024));
    expect(res.status).toBe(413);
    expect(res.headers.get("content-type")).toStartWith("application/json");
    expect(await res.json()).toMatchObject({ code: "FILE_TOO_LARGE" });
  }, 120_000);
});

test("nginx answers a body over its own limit in imgpress's JSON shape, not its HTML page", async () => {
  // Announced by Content-Length: nginx answers before reading the body.
  const res = await fetch(`${proxies.nginx.url}/v1/plugin/convert`, {
    method: "POST",
    headers: { "content-type": "application/octet-stream" },
    body: new Uint8Array(22 * MiB),
    tls: { ca: tlsCert },
  } as RequestInit).catch((err: Error) => err);
  if (res instanceof Error) throw res;
  expect(res.status).toBe(413);
  expect(await res.json()).toEqual({
    error: "FILE_TOO_LARGE",
    message: "The upload is larger than this server accepts (images up to 20 MiB).",
    code: "FILE_TOO_LARGE",
  });
}, 60_000);

test("a proxy that sends no X-Forwarded-Proto: 403 HTTPS_REQUIRED naming the header, and a log line saying so", async () => {
  const res = await minimalClient.json("GET", "/health");
  expect(res.status).toBe(403);
  expect(res.body).toMatchObject({ code: "HTTPS_REQUIRED", message: MISSING_PROTO_MESSAGE });
  const line = await server.waitForLog(
    (l) => l.json?.level === "warn" && String(l.json.msg).includes("sent no X-Forwarded-Proto"),
  );
  expect(line.json?.refused).toBeGreaterThanOrEqual(1);
});
