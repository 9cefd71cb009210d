import { Buffer } from "node:buffer";
import { AppError } from "../../core/errors.ts";

/** One part of a multipart/form-data body; `data` is a view into the request bytes, not a copy. */
export interface FormPart {
  name: string;
  filename?: string;
  data: Uint8Array;
}

const CRLF_CRLF = Buffer.from("\r\n\r\n");

/**
 * Splits a multipart/form-data body (RFC 7578) that is already in memory. Parts are views into
 * `body`, so a 20 MB upload is never copied; the runtime's FormData would copy it into a Blob.
 */
export function parseMultipart(body: Uint8Array, contentType: string | null): FormPart[] {
  // A parameter named exactly `boundary` (not `xboundary`), wherever it stands among the others.
  const boundary = /^multipart\/form-data\s*;(?:[^;]*;)*?\s*boundary=(?:"([^"]+)"|([^\s;]+))/i.exec(contentType ?? "");
  if (!boundary) {
    // A client that set the type by hand (often without the boundary) is told what is missing.
    const why = /^multipart\/form-data\b/i.test(contentType ?? "")
      ? "The Content-Type multipart/form-data has no boundary parameter (set by the HTTP library when it builds the form: do not set this header by hand)"
      : "Send the request as multipart/form-data";
    throw new AppError(415, "UNSUPPORTED_MEDIA_TYPE", `${why}, with the image in the field \`image\`.`);
  }
  const buf = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const delimiter = Buffer.from(`--${boundary[1] ?? boundary[2]}`);
  const partEnd = Buffer.from(`\r\n--${boundary[1] ?? boundary[2]}`);
  const malformed = (why: string) => new AppError(400, "INVALID_MULTIPART", `The multipart body is malformed: ${why}.`);

  let pos = buf.indexOf(delimiter);
  if (pos < 0) throw malformed("the boundary never appears");
  const parts: FormPart[] = [];
  for (;;) {
    pos += delimiter.length;
    if (buf[pos] === 0x2d && buf[pos + 1] === 0x2d) return parts; // "--" closes the body
    // A delimiter the body ends at (or after which only the line break comes) lacks its closing "--".
    if (buf.length - pos <= 2 && buf.subarray(pos).every((byte) => byte === 0x0d || byte === 0x0a))
      throw malformed('the closing boundary has no final "--" (truncated upload?)');
    const headerEnd = buf.indexOf(CRLF_CRLF, pos);
    if (headerEnd < 0) throw malformed("a part has no end of headers");
    const headers = buf.toString("utf8", pos, headerEnd);
    const next = buf.indexOf(partEnd, headerEnd + 4);
    if (next < 0) throw malformed("the closing boundary is missing (truncated upload?)");
    const disposition = /content-disposition:\s*form-data\s*;([^\r\n]*)/i.exec(headers)?.[1];
    if (disposition) {
      const name = param(disposition, "name");
      if (name !== undefined)
        parts.push({ name, filename: param(disposition, "filename"), data: body.subarray(headerEnd + 4, next) });
    }
    pos = next + 2;
  }
}

function param(disposition: string, key: string): string | undefined {
  const match = new RegExp(`(?:^|;)\\s*${key}="((?:[^"\\\\]|\\\\.)*)"|(?:^|;)\\s*${key}=([^;\\s]+)`, "i").exec(
    disposition,
  );
  if (!match) return undefined;
  // Only \" is unescaped: browsers send Windows paths (C:\dir\p.jpg) with bare backslashes.
  return match[1] !== undefined ? match[1].replace(/\\"/g, '"') : match[2];
}
