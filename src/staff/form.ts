import { readSmallBody } from "../core/http/body.ts";

/** Largest form body the staff pages accept. */
const MAX_FORM_BYTES = 8 * 1024;

/** Route parser for HTML forms: `application/x-www-form-urlencoded`, at most 8 KiB, into a string record. */
export async function parseFormBody({ request }: { request: Request }): Promise<Record<string, string>> {
  const bytes = await readSmallBody(request, {
    type: "application/x-www-form-urlencoded",
    wrongType: "Send the form as application/x-www-form-urlencoded.",
    maxBytes: MAX_FORM_BYTES,
    name: "form",
  });
  return Object.fromEntries(new URLSearchParams(new TextDecoder().decode(bytes)));
}
