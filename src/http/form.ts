import { AppError } from "../errors.ts";
import { readBody } from "./body.ts";

/** Largest form body the staff pages accept. */
export const MAX_FORM_BYTES = 8 * 1024;

/** Route parser for HTML forms: `application/x-www-form-urlencoded`, at most 8 KiB, into a string record. */
export async function parseFormBody({ request }: { request: Request }): Promise<Record<string, string>> {
  const type = request.headers.get("content-type")?.split(";")[0]?.trim().toLowerCase();
  if (type !== "application/x-www-form-urlencoded") {
    throw new AppError(415, "UNSUPPORTED_MEDIA_TYPE", "Send the form as application/x-www-form-urlencoded.");
  }
  const bytes = await readBody(request, {
    maxBytes: MAX_FORM_BYTES,
    timeoutMs: 10_000,
    tooLarge: () => new AppError(413, "PAYLOAD_TOO_LARGE", `The form is larger than ${MAX_FORM_BYTES} bytes.`),
  });
  return Object.fromEntries(new URLSearchParams(new TextDecoder().decode(bytes)));
}
