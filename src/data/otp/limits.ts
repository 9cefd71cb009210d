// The code-request and sign-in limits client keys and staff sign-in share, with the refusal their
// pages and answers recognise.

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** The rate limits of code requests and code checks, per address and per client IP (documented in docs/api.md). */
export const otpLimits = {
  requestPerAddress: [
    { limit: 1, windowMs: MINUTE },
    { limit: 5, windowMs: HOUR },
  ],
  requestPerIp: [{ limit: 20, windowMs: HOUR }],
  verifyPerIp: [{ limit: 30, windowMs: 5 * MINUTE }],
} as const;

/** The longest window of these limits: rate events older than it count for none of them and may be pruned. */
export const LONGEST_OTP_WINDOW_MS = Math.max(
  ...Object.values(otpLimits).flatMap((rules) => rules.map((rule) => rule.windowMs)),
);

/** The 429 message of a code request refused for its e-mail address (client keys and staff sign-in alike). */
export const RECENT_CODE = "A code was requested for this e-mail address recently.";
