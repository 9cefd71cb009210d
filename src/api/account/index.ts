import { Elysia, t } from "elysia";
import { errorAnswer } from "../../core/errors.ts";
import { version } from "../../core/version.ts";
import type { UsageQueries } from "../../data/usage/service.ts";
import type { ApiAuth } from "../requestauth/index.ts";

/** GET: the calling key's own figures, for a plugin's status box; below API_PREFIX. */
export const ACCOUNT_PATH = "/plugin/account";

/** What a key may learn about itself: never the secret, never other keys. */
export const AccountResponse = t.Object({
  key_prefix: t.String({ description: "The first 12 characters of the api_key, as the staff pages show it" }),
  email: t.String(),
  site_url: t.String({ description: "The site the key was issued for ('' when none was given)" }),
  server_version: t.String(),
  month: t.Object({
    from: t.Integer({ description: "Start of the current calendar month (UTC), Unix ms" }),
    conversions: t.Integer({ description: "Successful conversions this month" }),
    bytes_in: t.Integer(),
    bytes_out: t.Integer(),
    bytes_saved: t.Integer({ description: "bytes_in − bytes_out (negative when outputs grew)" }),
  }),
  total: t.Object({ conversions: t.Integer(), bytes_saved: t.Integer() }),
  max_in_progress: t.Integer({
    description:
      "Conversions this key may have admitted at once (IMGPRESS_KEY_MAX_ADMITTED); more get 429 TOO_MANY_IN_PROGRESS",
  }),
});

/** Everything the route needs; the services are the app's own. */
export interface AccountDeps {
  /** The app's key macro (a signature is bound to the path it was made for, so one for /convert opens nothing here). */
  keyAuth: ApiAuth;
  usage: Pick<UsageQueries, "key">;
  /** Conversions one key may have admitted at once (IMGPRESS_KEY_MAX_ADMITTED). */
  keyMaxAdmitted: number;
  now?: () => number;
}

/** GET ACCOUNT_PATH: authenticated like a conversion (bearer, or signed over the empty body with ENDPOINT /plugin/account). */
export function accountRoutes(deps: AccountDeps) {
  const now = deps.now ?? Date.now;
  return new Elysia({ name: "account" }).use(deps.keyAuth).get(
    ACCOUNT_PATH,
    async ({ credential, set }) => {
      await credential.verifyBody(new Uint8Array(0));
      const from = monthStart(now());
      const detail = await deps.usage.key(credential.key.id, { from, to: now() + 3_600_000 });
      if (!detail) throw new Error("an active key has no row");
      const totals = detail.usage.totals;
      set.headers["cache-control"] = "no-store";
      return {
        key_prefix: detail.key.prefix,
        email: detail.key.email,
        site_url: detail.key.siteUrl,
        server_version: version,
        month: {
          from,
          conversions: totals.conversions,
          bytes_in: totals.bytesIn,
          bytes_out: totals.bytesOut,
          bytes_saved: totals.bytesSaved,
        },
        total: { conversions: detail.key.conversions, bytes_saved: detail.key.bytesSaved },
        max_in_progress: deps.keyMaxAdmitted,
      };
    },
    {
      apiKey: true,
      response: {
        200: AccountResponse,
        401: errorAnswer(
          "UNAUTHORIZED, INVALID_API_KEY (unknown or revoked), INVALID_SIGNATURE, TIMESTAMP_OUT_OF_RANGE, REPLAYED_REQUEST, SCHEME_DISABLED",
        ),
        503: errorAnswer("STORAGE_UNAVAILABLE (with Retry-After)"),
      },
      detail: {
        summary: "The calling key's prefix, owner, site and usage this month",
        description:
          "For a plugin's status box. Signed requests sign GET, /plugin/account, the timestamp and the SHA-256 of the empty body.",
        tags: ["credentials"],
        security: [{ bearer: [] }, { signedKey: [], signedTimestamp: [], signedSignature: [] }],
      },
    },
  );
}

/** 00:00 UTC on the first day of the month holding `ms`. */
export function monthStart(ms: number): number {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
}
