/**
 * parseMultipart against the runtime's own multipart: bodies serialised by `new Response(formData)`
 * must split into the same names, filenames and bytes that the runtime's `formData()` parser sees,
 * and the parts must be views into the body (a 20 MB upload is never copied).
 */
import { describe, expect, test } from "bun:test";
import { type FormPart, parseMultipart } from "../../../src/api/convert/multipart.ts";
import { AppError } from "../../../src/core/errors.ts";
import { type FieldValue, formBody } from "../../support/convert-helpers.ts";

const enc = new TextEncoder();
const bytes = (s: string) => enc.encode(s);

/** What the runtime's own parser makes of a body: [name, filename | undefined, bytes]. */
async function runtimeParts(body: Uint8Array, contentType: string): Promise<[string, string | undefined, number[]][]> {
  const form = await new Response(body as Uint8Array<ArrayBuffer>, {
    headers: { "content-type": contentType },
  }).formData();
  const out: [string, string | undefined, number[]][] = [];
  for (const [name, value] of form) {
    if (typeof value === "string") out.push([name, undefined, [...enc.encode(value)]]);
    else out.push([name, value.name, [...new Uint8Array(await value.arrayBuffer())]]);
  }
  return out;
}

const ours = (parts: FormPart[]) =>
  parts.map((p) => [p.name, p.filename, [...p.data]] as [string, string | undefined, number[]]);

function refusal(fn: () => unknown): AppError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return err as AppError;
  }
  throw new Error("expected parseMultipart to throw");
}

/** Bytes that look like multipart framing, to be carried inside file data. */
const tricky = new Uint8Array([
  ...bytes("\r\n"),
  0x00,
  0xff,
  ...bytes("\r\n--"),
  ...bytes("--\r\n\r\n"),
  ...bytes('Content-Disposition: form-data; name="evil"\r\n\r\n'),
  ...bytes("\r\n------WebKitFormBoundary\r\n"),
  0x0d,
  0x0a,
  0x0d,
  0x0a,
  0x2d,
  0x2d,
  0x0d,
]);

describe("bodies serialised by the runtime", () => {
  const cases: { name: string; fields: Record<string, FieldValue | FieldValue[]> }[] = [
    {
      name: "image + text fields",
      fields: {
        image: { data: new Uint8Array([0xff, 0xd8, 0xff, 1, 2, 3]), filename: "photo.jpg", type: "image/jpeg" },
        format: "avif",
        quality: "lossless",
        max_width: "640",
      },
    },
    {
      name: "CRLF and boundary look-alikes inside file data",
      fields: { image: { data: tricky, filename: "x.png" }, format: "webp" },
    },
    { name: "file data ending in CRLF", fields: { image: { data: bytes("abc\r\n"), filename: "a.png" } } },
    { name: "file data ending in CRLF--", fields: { image: { data: bytes("abc\r\n--"), filename: "a.png" } } },
    { name: "text value with CRLF", fields: { format: "we\r\nbp" } },
    { name: "filename with double quotes", fields: { image: { data: bytes("q"), filename: 'my "best" photo.jpg' } } },
    {
      name: "filename with CR/LF",
      fields: { image: { data: bytes("q"), filename: "a\r\nContent-Type: text/html.jpg" } },
    },
    { name: "unicode filename", fields: { image: { data: bytes("u"), filename: "Fête à Zürich — 東京 😀.jpeg" } } },
    {
      name: "filename with semicolons and equals",
      fields: { image: { data: bytes("s"), filename: "a; name=format; b=c.jpg" } },
    },
    {
      name: "empty file and empty value",
      fields: { image: { data: new Uint8Array(0), filename: "empty.jpg" }, format: "" },
    },
    { name: "duplicated field", fields: { format: ["webp", "avif"] } },
    { name: "unicode field name", fields: { naïve_字段: "v" } },
    {
      name: "large binary part",
      fields: { image: { data: new Uint8Array(300_000).map((_, i) => (i * 7919) & 0xff), filename: "big.jpg" } },
    },
  ];

  test.each(cases)("$name: same parts as the runtime's parser", async ({ fields }) => {
    const body = await formBody(fields);
    const parts = parseMultipart(body.bytes, body.contentType);
    expect(ours(parts)).toEqual(await runtimeParts(body.bytes, body.contentType));
    expect(parts.length).toBe(Object.values(fields).flat().length);
  });

  test("parts are views into the body, not copies", async () => {
    const body = await formBody({ image: { data: tricky, filename: "x.jpg" }, format: "webp" });
    const parts = parseMultipart(body.bytes, body.contentType);
    expect(parts.length).toBe(2);
    for (const part of parts) {
      expect(part.data.buffer).toBe(body.bytes.buffer);
      expect(part.data.byteOffset).toBeGreaterThan(body.bytes.byteOffset);
      expect(part.data.byteOffset + part.data.byteLength).toBeLessThan(body.bytes.byteOffset + body.bytes.byteLength);
    }
    // A write through the view shows in the body: the same memory.
    const image = parts[0]!;
    const at = image.data.byteOffset - body.bytes.byteOffset;
    image.data[0] = 0x42;
    expect(body.bytes[at]).toBe(0x42);
  });

  test("a body that is itself a view into a larger buffer (offset ≠ 0) parses and stays a view", async () => {
    const body = await formBody({ image: { data: bytes("payload"), filename: "v.jpg" } });
    const outer = new Uint8Array(body.bytes.length + 100);
    outer.set(body.bytes, 37);
    const view = outer.subarray(37, 37 + body.bytes.length);
    const [part] = parseMultipart(view, body.contentType);
    expect(new TextDecoder().decode(part!.data)).toBe("payload");
    expect(part!.data.buffer).toBe(outer.buffer);
  });
});

describe("hand-written bodies (also checked against the runtime's parser)", () => {
  const part = (b: string, name: string, value: string, filename?: string) =>
    `--${b}\r\nContent-Disposition: form-data; name="${name}"${filename === undefined ? "" : `; filename="${filename}"`}\r\n\r\n${value}\r\n`;

  test.each([
    { name: "unquoted boundary", contentType: "multipart/form-data; boundary=simple123", b: "simple123" },
    { name: "quoted boundary", contentType: 'multipart/form-data; boundary="simple123"', b: "simple123" },
    {
      name: "quoted boundary with a space and specials",
      contentType: 'multipart/form-data; boundary="a b\'()+_,-./:=?"',
      b: "a b'()+_,-./:=?",
    },
    {
      name: "boundary after another parameter",
      contentType: "multipart/form-data; charset=utf-8; boundary=xyz",
      b: "xyz",
    },
    {
      name: "boundary followed by another parameter",
      contentType: "multipart/form-data; boundary=xyz; charset=utf-8",
      b: "xyz",
    },
    { name: "mixed-case media type and parameter", contentType: "Multipart/Form-Data; Boundary=xyz", b: "xyz" },
    {
      name: "a parameter whose name ends in 'boundary' is not the boundary",
      contentType: "multipart/form-data; xboundary=ZZ; boundary=xyz",
      b: "xyz",
    },
  ])("$name", async ({ contentType, b }) => {
    const body = bytes(`${part(b, "format", "avif") + part(b, "image", "PIXELS", "p.png")}--${b}--\r\n`);
    const parts = parseMultipart(body, contentType);
    expect(ours(parts)).toEqual([
      ["format", undefined, [...bytes("avif")]],
      ["image", "p.png", [...bytes("PIXELS")]],
    ]);
    expect(ours(parts)).toEqual(await runtimeParts(body, contentType));
  });

  test("preamble and epilogue are ignored", async () => {
    const b = "BND";
    const body = bytes(
      `This is the preamble.\r\nIt has lines.\r\n${part(b, "format", "webp")}--${b}--\r\nepilogue text\r\n`,
    );
    expect(ours(parseMultipart(body, `multipart/form-data; boundary=${b}`))).toEqual([
      ["format", undefined, [...bytes("webp")]],
    ]);
    expect(ours(parseMultipart(body, `multipart/form-data; boundary=${b}`))).toEqual(
      await runtimeParts(body, `multipart/form-data; boundary=${b}`),
    );
  });

  test("unquoted name and filename parameters", () => {
    const body = bytes(
      "--B\r\nContent-Disposition: form-data; name=image; filename=p.png\r\nContent-Type: image/png\r\n\r\nDATA\r\n--B--\r\n",
    );
    expect(ours(parseMultipart(body, "multipart/form-data; boundary=B"))).toEqual([
      ["image", "p.png", [...bytes("DATA")]],
    ]);
  });

  test("curl-style backslash-escaped quote in a filename", () => {
    const body = bytes(
      '--B\r\nContent-Disposition: form-data; name="image"; filename="a\\"b.png"\r\n\r\nD\r\n--B--\r\n',
    );
    expect(parseMultipart(body, "multipart/form-data; boundary=B")[0]?.filename).toBe('a"b.png');
  });

  test("header names and the disposition are case-insensitive; extra part headers are ignored", () => {
    const body = bytes(
      '--B\r\ncontent-type: text/plain\r\nCONTENT-DISPOSITION: Form-Data; Name="quality"\r\n\r\nlossless\r\n--B--',
    );
    expect(ours(parseMultipart(body, "multipart/form-data; boundary=B"))).toEqual([
      ["quality", undefined, [...bytes("lossless")]],
    ]);
  });

  test("parts without a form-data name are skipped, the rest kept", () => {
    const body = bytes(
      '--B\r\nContent-Type: text/plain\r\n\r\nno disposition\r\n--B\r\nContent-Disposition: form-data; filename="x"\r\n\r\nno name\r\n--B\r\nContent-Disposition: form-data; name="format"\r\n\r\navif\r\n--B--\r\n',
    );
    expect(ours(parseMultipart(body, "multipart/form-data; boundary=B"))).toEqual([
      ["format", undefined, [...bytes("avif")]],
    ]);
  });

  test("an empty form (only the closing delimiter) has no parts", () => {
    expect(parseMultipart(bytes("--B--\r\n"), "multipart/form-data; boundary=B")).toEqual([]);
  });
});

describe("malformed bodies → 400 INVALID_MULTIPART", () => {
  test.each([
    {
      name: "missing closing boundary",
      body: '--B\r\nContent-Disposition: form-data; name="image"; filename="a.jpg"\r\n\r\nDATA',
    },
    {
      name: "truncated after a part's data and CRLF",
      body: '--B\r\nContent-Disposition: form-data; name="image"\r\n\r\nDATA\r\n',
    },
    {
      name: "truncated right after a delimiter",
      body: '--B\r\nContent-Disposition: form-data; name="image"\r\n\r\nDATA\r\n--B',
    },
    { name: "truncated inside part headers", body: "--B\r\nContent-Disposition: form-da" },
    { name: "boundary never appears", body: "just some bytes\r\n\r\n" },
    { name: "empty body", body: "" },
    {
      name: "body framed with another boundary",
      body: '--OTHER\r\nContent-Disposition: form-data; name="x"\r\n\r\nv\r\n--OTHER--\r\n',
    },
  ])("$name", ({ body }) => {
    const err = refusal(() => parseMultipart(bytes(body), "multipart/form-data; boundary=B"));
    expect({ status: err.status, code: err.code }).toEqual({ status: 400, code: "INVALID_MULTIPART" });
  });

  test('a last delimiter without its final "--" is named as such, not as a part without headers', () => {
    for (const end of ["", "\r\n"]) {
      const err = refusal(() =>
        parseMultipart(
          bytes(`--B\r\nContent-Disposition: form-data; name="image"\r\n\r\nDATA\r\n--B${end}`),
          "multipart/form-data; boundary=B",
        ),
      );
      expect(err.message).toBe(
        'The multipart body is malformed: the closing boundary has no final "--" (truncated upload?).',
      );
    }
  });

  test("a runtime-serialised body cut short at any point is refused, never half-read", async () => {
    const body = await formBody({ image: { data: tricky, filename: "x.jpg" }, format: "avif" });
    const closing = body.bytes.length - 2; // everything up to the final CRLF after "--"
    for (let cut = 1; cut < closing - 2; cut += 7) {
      let outcome: string;
      try {
        const parts = parseMultipart(body.bytes.subarray(0, cut), body.contentType);
        outcome = `parsed ${parts.length} part(s)`;
      } catch (err) {
        outcome = (err as AppError).code;
      }
      expect({ cut, outcome }).toEqual({ cut, outcome: "INVALID_MULTIPART" });
    }
  });
});

describe("not multipart/form-data → 415 UNSUPPORTED_MEDIA_TYPE", () => {
  test.each([
    ["null (no Content-Type)", null],
    ["empty", ""],
    ["application/json", "application/json"],
    ["urlencoded", "application/x-www-form-urlencoded"],
    ["raw image", "image/jpeg"],
    ["multipart/mixed", "multipart/mixed; boundary=B"],
    ["form-data without a boundary", "multipart/form-data"],
    ["form-data with an empty boundary", "multipart/form-data; boundary="],
    ["form-data with only a look-alike parameter", "multipart/form-data; xboundary=B"],
  ] as const)("%s", (_name, contentType) => {
    const err = refusal(() =>
      parseMultipart(bytes('--B\r\nContent-Disposition: form-data; name="x"\r\n\r\nv\r\n--B--\r\n'), contentType),
    );
    expect({ status: err.status, code: err.code }).toEqual({ status: 415, code: "UNSUPPORTED_MEDIA_TYPE" });
    // Form data without its boundary (a type set by hand) is told as that, not as "send form data".
    const noBoundary = contentType?.startsWith("multipart/form-data") ?? false;
    expect(err.message).toStartWith(
      noBoundary
        ? "The Content-Type multipart/form-data has no boundary parameter"
        : "Send the request as multipart/form-data",
    );
  });
});
