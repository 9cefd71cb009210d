import { AppError } from "../../core/errors.ts";

/**
 * Normalises a site URL: http(s) only, no credentials, at most 2048 characters; the result is the
 * origin plus path without a trailing slash (query and fragment dropped), so
 * `https://Example.com/blog/` and `https://example.com/blog` name the same site.
 */
export function normalizeSiteUrl(raw: string): string {
  const invalid = (why: string) => new AppError(400, "VALIDATION_ERROR", `site_url ${why}.`);
  if (raw.length > 2048) throw invalid("is longer than 2048 characters");
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw invalid("is not a valid URL");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") throw invalid("must start with https:// or http://");
  if (url.username || url.password) throw invalid("must not contain a user name or password");
  return `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
}
