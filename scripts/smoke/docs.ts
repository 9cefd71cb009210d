// Stage "docs": the API docs page and its script are served by the binary itself.
import type { Service } from "../../test/support/imgpress.ts";
import type { Smoke } from "./context.ts";
import { assert } from "./report.ts";

/** Checks GET /v1/docs: HTML whose scripts all come from the server, and the OpenAPI JSON. */
export async function docsStage(s: Smoke, svc: Service): Promise<void> {
  await s.report.check(s.tag, "GET /v1/docs: HTML with its script served locally", async () => {
    const res = await svc.client.fetch("/v1/docs");
    const html = await res.text();
    assert(
      res.status === 200 && /text\/html/.test(res.headers.get("content-type") ?? ""),
      `HTTP ${res.status} ${res.headers.get("content-type")}`,
    );
    const refs = [...html.matchAll(/<(?:script|link)\b[^>]*\b(?:src|href)\s*=\s*["']([^"']+)["']/gi)].map((m) => m[1]!);
    const external = refs.filter((r) => /^(https?:)?\/\//i.test(r));
    assert(external.length === 0, `page loads from outside the server: ${external.join(", ")}`);
    const scripts = refs.filter((r) => /\.m?js(\?|$)/.test(r));
    assert(scripts.length > 0, "page references no script");
    const sizes: string[] = [];
    for (const src of scripts) {
      const url = new URL(src, `${svc.url}/v1/docs`);
      const js = await svc.client.fetch(url.pathname + url.search);
      const body = await js.arrayBuffer();
      assert(js.status === 200, `${src}: HTTP ${js.status}`);
      assert(
        /javascript/.test(js.headers.get("content-type") ?? ""),
        `${src}: content-type ${js.headers.get("content-type")}`,
      );
      assert(body.byteLength > 100_000, `${src}: only ${body.byteLength} bytes`);
      sizes.push(`${src} ${(body.byteLength / 1048576).toFixed(1)} MiB`);
    }
    const spec = await svc.client.json("GET", "/v1/docs/json");
    assert(spec.body?.paths?.["/v1/plugin/convert"], "/v1/docs/json lacks /v1/plugin/convert");
    return `${sizes.join(", ")}; /v1/docs/json has ${Object.keys(spec.body.paths).length} paths`;
  });
}
