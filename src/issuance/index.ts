import { Elysia } from "elysia";
import { parseJsonBody } from "../http/json.ts";
import { ErrorModel } from "../errors.ts";
import { RequestOtpBody, RequestOtpResponse, VerifyOtpBody, VerifyOtpResponse } from "./model.ts";
import { OTP_TTL_S, type OtpService } from "./service.ts";

/** The passwordless credential routes (spec 4.2, 4.3). */
export function authRoutes(otp: OtpService, clientIp: (request: Request) => string) {
  return new Elysia({ name: "auth", prefix: "/plugin/auth" })
    .post(
      "/request-otp",
      async ({ body, request }) => {
        await otp.request({ email: body.email, siteUrl: body.site_url, ip: clientIp(request) });
        return { status: "success" as const, message: "A 6-digit code was sent to the e-mail address.", expires_in: OTP_TTL_S };
      },
      {
        parse: parseJsonBody,
        body: RequestOtpBody,
        response: { 200: RequestOtpResponse, 400: ErrorModel, 403: ErrorModel, 408: ErrorModel, 413: ErrorModel, 415: ErrorModel, 429: ErrorModel, 502: ErrorModel, 503: ErrorModel },
        detail: { summary: "E-mail a one-time code", tags: ["credentials"] },
      },
    )
    .post(
      "/verify-otp",
      async ({ body, request, set }) => {
        const issued = await otp.verify({ email: body.email, otp: body.otp, siteUrl: body.site_url, ip: clientIp(request) });
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
        response: { 200: VerifyOtpResponse, 400: ErrorModel, 401: ErrorModel, 403: ErrorModel, 408: ErrorModel, 413: ErrorModel, 415: ErrorModel, 429: ErrorModel, 503: ErrorModel },
        detail: { summary: "Exchange the code for an API key and secret key", tags: ["credentials"] },
      },
    );
}
