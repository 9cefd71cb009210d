/**
 * Request headers over 16 KiB: Bun's parser refuses them before the app (bare 431, see
 * test/e2e/slow-clients.e2e.test.ts); the shared fetch handler applies the same limit with the JSON
 * error, which is what Deno clients get.
 */
import { expect, test } from "bun:test";
import { createFetchHandler, MAX_HEADER_BYTES } from "../../../src/core/http/serve.ts";
import { createLogger } from "../../../src/core/log.ts";

const handler = createFetchHandler(
  async () => new Response("app"),
  createLogger("error", () => {}),
  { hsts: false },
);

test("headers just under the limit reach the app", async () => {
  const res = await handler(
    new Request("http://localhost/health", { headers: { "x-pad": "a".repeat(MAX_HEADER_BYTES - 200) } }),
    "127.0.0.1",
  );
  expect(await res.text()).toBe("app");
});

test("a 60 KB Content-Type → 431 HEADERS_TOO_LARGE as JSON, with the request id", async () => {
  const res = await handler(
    new Request("http://localhost/v1/plugin/convert", {
      method: "POST",
      headers: { "content-type": "a".repeat(60 * 1024) },
    }),
    "127.0.0.1",
  );
  expect(res.status).toBe(431);
  expect(await res.json()).toEqual({
    error: "Request Header Fields Too Large",
    message: "The request headers exceed 16 KiB.",
    code: "HEADERS_TOO_LARGE",
  });
  expect(res.headers.get("x-request-id")).toBeTruthy();
});
