import { Elysia } from "elysia";
import { errorAnswer } from "../../core/errors.ts";
import { clientContext } from "../../core/http/client.ts";
import { parseJsonBody } from "../../core/http/json.ts";
import { REQUEST_OTP_PATH, VERIFY_OTP_PATH } from "../../core/http/paths.ts";
import { RequestOtpBody, RequestOtpResponse, VerifyOtpBody, VerifyOtpResponse } from "./model.ts";
import { type KeyIssuance, OTP_TTL_S } from "./service.ts";

// The error answers both credential routes share, by status.
const BODY_ERRORS = {
  400: errorAnswer("VALIDATION_ERROR (malformed JSON, a field missing or mistyped: named in message)"),
  403: errorAnswer("EMAIL_NOT_ALLOWED"),
  408: errorAnswer("REQUEST_TIMEOUT (the body did not arrive within 10 s)"),
  413: errorAnswer("PAYLOAD_TOO_LARGE (a body over 16 KiB)"),
  415: errorAnswer("UNSUPPORTED_MEDIA_TYPE (not JSON, or compressed)"),
};
const STORAGE_ERROR = errorAnswer("STORAGE_UNAVAILABLE (nothing was changed; with Retry-After)");

/** The passwordless credential routes (spec 4.2, 4.3). */
export function issuanceRoutes(issuance: KeyIssuance) {
  return new Elysia({ name: "issuance" })
    .use(clientContext)
    .post(
      REQUEST_OTP_PATH,
      async ({ body, clientIp }) => {
        await issuance.request({ email: body.email, siteUrl: body.site_url, ip: clientIp });
        return {
          status: "success" as const,
          message: "A 6-digit code was sent to the e-mail address.",
          expires_in: OTP_TTL_S,
        };
      },
      {
        parse: parseJsonBody,
        body: RequestOtpBody,
        response: {
          200: RequestOtpResponse,
          ...BODY_ERRORS,
          429: errorAnswer("RATE_LIMITED (with Retry-After)"),
          502: errorAnswer("MAIL_DELIVERY_FAILED (no code was issued)"),
          503: STORAGE_ERROR,
        },
        detail: { summary: "E-mail a one-time code", tags: ["credentials"] },
      },
    )
    .post(
      VERIFY_OTP_PATH,
      async ({ body, clientIp, set }) => {
        const issued = await issuance.verify({
          email: body.email,
          otp: body.otp,
          siteUrl: body.site_url,
          ip: clientIp,
        });
        set.headers["cache-control"] = "no-store";
        return {
          status: "success" as const,
          api_key: issued.apiKey,
          secret_key: issued.secretKey,
          message: "Authenticated. Store both keys now: they are not shown again.",
        };
      },
      {
        parse: parseJsonBody,
        body: VerifyOtpBody,
        response: {
          200: VerifyOtpResponse,
          ...BODY_ERRORS,
          401: errorAnswer("INVALID_OTP (wrong, expired, used or burnt)"),
          429: errorAnswer(
            "RATE_LIMITED (with Retry-After), TOO_MANY_ATTEMPTS (the 5th wrong code burnt it: request a new one)",
          ),
          503: STORAGE_ERROR,
        },
        detail: { summary: "Exchange the code for an API key and secret key", tags: ["credentials"] },
      },
    );
}
