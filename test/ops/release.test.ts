// The release's text files, checked without building anything: the committed settings example
// is the one the settings table generates, and what the packages derive from deploy/ holds.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { compose, stopGraceS } from "../../scripts/release/compose.ts";
import { ROOT, release, unitFile } from "../../scripts/release/context.ts";
import { ENV_EXAMPLE, envExample } from "../../scripts/release/env-example.ts";
import { settings } from "../../src/core/config.ts";

describe("deploy/imgpress.env.example", () => {
  const committed = readFileSync(join(ROOT, ENV_EXAMPLE), "utf8");

  test("is what the settings table generates (bun scripts/release/env-example.ts --write)", () => {
    expect(committed).toBe(envExample());
  });

  test("lists every setting once, commented out, so an unedited copy changes nothing", () => {
    const lines = committed.split("\n");
    for (const s of settings) expect(lines.filter((l) => l.startsWith(`#${s.env}=`))).toHaveLength(1);
    expect(lines.filter((l) => l.trim() !== "" && !l.startsWith("#"))).toEqual([]);
  });

  test("writes a fixed default as its value, e.g. the port and the shutdown timeout", () => {
    expect(committed).toContain("\n#IMGPRESS_PORT=8443\n");
    expect(committed).toContain("\n#IMGPRESS_SHUTDOWN_TIMEOUT_S=30\n");
    expect(committed).toContain("\n#IMGPRESS_ALLOWED_EMAILS=*\n");
  });
});

describe("packaging text", () => {
  test("the unit's ExecStart is rewritten for the .deb, its arguments kept", () => {
    expect(unitFile("/usr/bin/imgpress")).toMatch(/^ExecStart=\/usr\/bin\/imgpress serve$/m);
    expect(unitFile("/usr/bin/imgpress")).toMatch(/^EnvironmentFile=-\/etc\/imgpress\/imgpress\.env$/m);
  });

  test("compose.yaml: the version's image, a stop grace period covering the drain, the health check", () => {
    const r = { ...release("/nonexistent"), version: "9.8.7" };
    const text = compose(r);
    const fallback = (env: string) => Number(settings.find((s) => s.env === env)!.fallback!({}));
    expect(stopGraceS()).toBeGreaterThan(fallback("IMGPRESS_DRAIN_DELAY_S") + fallback("IMGPRESS_SHUTDOWN_TIMEOUT_S"));
    expect(text).toContain(`stop_grace_period: ${stopGraceS()}s`);
    const svc = (
      Bun.YAML.parse(text) as { services: Record<string, Record<string, unknown>>; volumes: Record<string, unknown> }
    ).services.imgpress!;
    expect(svc).toMatchObject({
      image: "imgpress:9.8.7",
      ports: ["8443:8443"],
      env_file: "imgpress.env",
      volumes: ["imgpress-data:/data", "imgpress-cache:/cache"],
      healthcheck: { test: ["CMD", "/usr/bin/imgpress", "health"] },
      stop_grace_period: `${stopGraceS()}s`,
    });
  });

  test("the systemd unit gives a stop the same room as compose", () => {
    const unit = readFileSync(join(ROOT, "deploy/imgpress.service"), "utf8");
    expect(unit).toContain(`TimeoutStopSec=${stopGraceS()}`);
  });
});
