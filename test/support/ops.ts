/**
 * Helpers for the operations tests (drain, crash, backup, disk faults): keys obtained through the
 * real OTP flow, conversion bursts against a running server, and a look into /internal/status.
 */
import { expect } from "bun:test";
import { STORAGE_RETRY_AFTER_S } from "../../src/data/db/faults.ts";
import { type Body, convertForm, type Keys, type RawResponse, readResponse } from "./convert-helpers.ts";
import type { RunningServer } from "./server.ts";
import { extractOtp, type SmtpSink } from "./smtp.ts";

/** Asks for a code, reads it from the sink and exchanges it: a fresh key pair for `email`. */
export async function obtainKeys(server: RunningServer, sink: SmtpSink, email: string): Promise<Keys> {
  // Only mail sent after this request: an address asked for twice must not get its old code back.
  const seen = sink.messages.length;
  expect((await server.json("POST", "/v1/plugin/auth/request-otp", { email })).status).toBe(200);
  const mail = await sink.waitFor(
    (m) => sink.messages.indexOf(m) >= seen && m.envelopeTo.includes(email) && /code/i.test(m.subject),
  );
  const verified = await server.json("POST", "/v1/plugin/auth/verify-otp", { email, otp: extractOtp(mail) });
  expect(verified.status).toBe(200);
  return verified.body as Keys;
}

/** POSTs one conversion with a bearer key; a connection error resolves to status 0 with the error's text. */
export async function convertBearer(
  server: RunningServer,
  apiKey: string,
  body: Body,
): Promise<RawResponse & { error?: string }> {
  try {
    const res = await server.fetch("/v1/plugin/convert", {
      method: "POST",
      body: body.bytes as Uint8Array<ArrayBuffer>,
      headers: { "content-type": body.contentType, authorization: `Bearer ${apiKey}` },
    });
    return await readResponse(res);
  } catch (err) {
    return { status: 0, headers: new Headers(), bytes: new Uint8Array(0), body: null, error: String(err) };
  }
}

/** The conversion form used for bursts: a photo-like JPEG converted to WebP. */
export function burstForm(image: Uint8Array): Promise<Body> {
  return convertForm(image, { format: "webp" });
}

/** The gate's counts from /internal/status (loopback is on the default allowlist). */
export async function gateStats(
  server: RunningServer,
): Promise<{ admitted: number; running: number; waiting: number; receiving: number }> {
  const status = await server.json("GET", "/internal/status");
  return status.body.conversions;
}

/** A 503 STORAGE_UNAVAILABLE in the one error shape: JSON {error, message, code} with the storage's Retry-After. */
export function expectStorageUnavailable(res: Pick<RawResponse, "status" | "headers" | "body">): void {
  expect({ status: res.status, code: res.body?.code }).toEqual({ status: 503, code: "STORAGE_UNAVAILABLE" });
  expect(Object.keys(res.body).sort()).toEqual(["code", "error", "message"]);
  expect(res.headers.get("content-type") ?? "").toStartWith("application/json");
  expect(res.headers.get("retry-after")).toBe(String(STORAGE_RETRY_AFTER_S));
}

/** Polls `check` every 50 ms until it returns true, failing after `timeoutMs`. */
export async function until(check: () => Promise<boolean> | boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(50);
  }
}

/**
 * Proves an absence within a bound: `check` must hold every time it is looked at for `forMs`.
 * A slow machine can only make this pass too easily, never fail it wrongly; the bound says how
 * long "nothing happened" was watched for.
 */
export async function holdsFor(check: () => Promise<boolean> | boolean, forMs: number, what: string): Promise<void> {
  const end = Date.now() + forMs;
  do {
    if (!(await check())) throw new Error(`${what} stopped holding within ${forMs} ms`);
    await Bun.sleep(Math.min(50, Math.max(0, end - Date.now())));
  } while (Date.now() < end);
  if (!(await check())) throw new Error(`${what} stopped holding within ${forMs} ms`);
}
