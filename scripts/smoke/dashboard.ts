// Stage "dashboard": the staff pages and their embedded, content-hashed assets come from the binary.
import type { Service } from "../../test/support/imgpress.ts";
import type { Smoke } from "./context.ts";
import { assert } from "./report.ts";

/** Checks /internal/: signed out it redirects to the sign-in page, whose CSS, script and icon the binary serves for a year. */
export async function dashboardStage(s: Smoke, svc: Service): Promise<void> {
  await s.report.check(s.tag, "GET /internal/: sign-in page with its embedded assets", async () => {
    const home = await svc.client.fetch("/internal/", { redirect: "manual" });
    await home.arrayBuffer();
    assert(
      home.status === 303 && home.headers.get("location")?.startsWith("/internal/login") === true,
      `/internal/: HTTP ${home.status} ${home.headers.get("location")}`,
    );
    const res = await svc.client.fetch("/internal/login");
    const html = await res.text();
    assert(
      res.status === 200 && /text\/html/.test(res.headers.get("content-type") ?? ""),
      `/internal/login: HTTP ${res.status}`,
    );
    const assets = [...html.matchAll(/(?:src|href)="(\/internal\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    assert(assets.length === 3, `expected a stylesheet, a script and an icon, found ${assets.join(", ") || "none"}`);
    for (const path of assets) {
      const asset = await svc.client.fetch(path);
      const body = await asset.arrayBuffer();
      assert(asset.status === 200 && body.byteLength > 200, `${path}: HTTP ${asset.status}, ${body.byteLength} bytes`);
      assert(
        asset.headers.get("cache-control") === "public, max-age=31536000, immutable",
        `${path}: cache-control ${asset.headers.get("cache-control")}`,
      );
    }
    return assets.map((a) => a.slice("/internal/assets/".length)).join(", ");
  });
}
