import { swagger } from "@elysiajs/swagger";
import { Elysia } from "elysia";
import { ErrorModel } from "../../core/errors.ts";
import { INTERNAL_PREFIX } from "../../core/http/paths.ts";
import { version } from "../../core/version.ts";
import { tidyOpenApi } from "./openapi.ts";

/** Where the UI script is served from, so the docs page works with no internet access. */
const SCALAR_ASSET = "/v1/docs/assets/scalar.js";

/**
 * Scalar options (for the pinned @scalar/api-reference 1.72) that switch off every control that
 * needs an internet service, so the page works, and promises nothing, with no connection: the AI
 * assistant ("Ask AI"), "Generate MCP", the toolbar ("Deploy", "Share", "Configure"), the
 * developer tools, the hosted API client, telemetry, web fonts, and the "Powered by Scalar" link.
 */
const OFFLINE_SCALAR = {
  agent: { disabled: true },
  mcp: { disabled: true },
  showToolbar: "never",
  showDeveloperTools: "never",
  hideClientButton: true,
  telemetry: false,
  withDefaultFonts: false,
  customCss: 'a[href*="scalar.com"] { display: none; }',
} as const;

/**
 * The docs page's own policy. It shares the dashboard's origin, so a script that ever ran there
 * could act as a signed-in staff member: only this server's scripts run, nothing is framed, and
 * the built-in client talks to this server alone. Scalar sets styles at run time (style-src
 * 'unsafe-inline'; no script needs it). Its configuration sits in a <script> element that holds
 * only whitespace; allowed by that whitespace's hash, it runs nothing, and without it the browser
 * reports a violation (the pinned plugin's template: test/e2e/docs.browser.test.ts sees a change).
 */
const DOCS_PAGE_HEADERS: Record<string, string> = {
  "content-security-policy":
    "default-src 'self'; script-src 'self' 'sha256-TcUB1mzXiQO4GxpTRZ0EMpOXKMU3u+n/q1WrgVIcs1I='; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "x-frame-options": "DENY",
};

/**
 * OpenAPI document at /v1/docs/json and the Scalar UI at /v1/docs, offering the request
 * authentication schemes of `authSchemes`. The UI script is a pinned copy served by this process
 * (the plugin's default page would fetch it from a CDN).
 */
export function docsRoutes(loadScalar: () => Promise<Blob>, authSchemes: readonly string[]) {
  let script: Promise<Blob> | undefined;
  const docs = new Elysia({ name: "docs" })
    // Registered before the plugin, so it applies to the plugin's document route.
    .onAfterHandle(({ path, response }) =>
      path === "/v1/docs/json" && response && typeof response === "object" && !(response instanceof Response)
        ? tidyOpenApi(response as Record<string, unknown>, authSchemes)
        : undefined,
    )
    .use(
      swagger({
        path: "/v1/docs",
        specPath: "/v1/docs/json",
        scalarCDN: SCALAR_ASSET,
        // An absolute spec URL: the plugin's relative default resolves against /v1/docs to /v1/v1/docs/json.
        scalarConfig: { spec: { url: "/v1/docs/json" }, ...OFFLINE_SCALAR } as Record<string, unknown>,
        exclude: [new RegExp(`^${INTERNAL_PREFIX}`), SCALAR_ASSET],
        documentation: {
          info: {
            title: "imgpress API",
            version,
            description:
              "Converts JPEG and PNG images to WebP or AVIF. Obtain an api_key and secret_key with the e-mailed one-time code, then call /v1/plugin/convert with a bearer key or an HMAC signature. Every error is JSON {error, message, code}.",
          },
          components: {
            schemas: { Error: ErrorModel as never },
            securitySchemes: {
              bearer: { type: "http", scheme: "bearer", description: "Authorization: Bearer <api_key>" },
              signedKey: {
                type: "apiKey",
                in: "header",
                name: "x-api-key",
                description: "api_key, with x-timestamp and x-signature (see docs/api.md)",
              },
              signedTimestamp: { type: "apiKey", in: "header", name: "x-timestamp", description: "Unix seconds" },
              signedSignature: {
                type: "apiKey",
                in: "header",
                name: "x-signature",
                description: "hex HMAC-SHA256 of METHOD\\nENDPOINT\\nTIMESTAMP\\nBODY_HASH",
              },
            },
          },
          tags: [
            { name: "credentials", description: "Passwordless key issuance" },
            { name: "conversion", description: "Image conversion" },
            { name: "operations", description: "Liveness and readiness" },
          ],
        },
      }),
    )
    .get(
      SCALAR_ASSET,
      async () => {
        script ??= loadScalar();
        return new Response(await script, {
          headers: { "content-type": "text/javascript; charset=utf-8", "cache-control": "public, max-age=86400" },
        });
      },
      { detail: { hide: true } },
    );
  // The plugin serves the page as one static Response, which no hook sees: its headers are set on it, once.
  const page = docs.routes.find((route) => route.method === "GET" && route.path === "/v1/docs")?.handler;
  if (!(page instanceof Response))
    throw new Error(
      "@elysiajs/swagger no longer serves /v1/docs as a static Response: DOCS_PAGE_HEADERS must be set another way",
    );
  for (const [name, value] of Object.entries(DOCS_PAGE_HEADERS)) page.headers.set(name, value);
  return docs;
}
