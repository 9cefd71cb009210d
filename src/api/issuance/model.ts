import { t } from "elysia";

const email = t.String({ maxLength: 320, description: "Address the code is sent to", examples: ["owner@example.com"] });
const siteUrl = t.Optional(
  t.String({
    maxLength: 2048,
    description: "URL of the site asking for access (http or https)",
    examples: ["https://blog.example.com"],
  }),
);

/** Body of POST /plugin/auth/request-otp (spec 2.4). */
export const RequestOtpBody = t.Object({ email, site_url: siteUrl });

/** Response of POST /plugin/auth/request-otp (spec 2.5). */
export const RequestOtpResponse = t.Object({
  status: t.Literal("success"),
  message: t.String(),
  expires_in: t.Integer({ description: "Lifetime of the code in seconds", examples: [900] }),
});

/** Body of POST /plugin/auth/verify-otp (spec 2.6). */
export const VerifyOtpBody = t.Object({
  email,
  otp: t.String({ pattern: "^[0-9]{6}$", description: "The 6-digit code from the e-mail", examples: ["042917"] }),
  site_url: siteUrl,
});

/** Response of POST /plugin/auth/verify-otp (spec 2.7): the key pair, shown exactly once. */
export const VerifyOtpResponse = t.Object({
  status: t.Literal("success"),
  api_key: t.String({ description: "API key (imp_…); only its SHA-256 is stored" }),
  secret_key: t.String({ description: "Secret for signing requests (imps_…); stored encrypted" }),
  message: t.String(),
});
