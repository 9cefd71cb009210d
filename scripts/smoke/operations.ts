// Stage "operations": the Prometheus endpoint counts the stage's conversions and passes promtool; `imgpress health` sees the server ready.
import type { Service } from "../../test/support/imgpress.ts";
import { cli, type Smoke } from "./context.ts";
import { assert } from "./report.ts";

/** Scrapes /internal/metrics after `conversions` successful conversions and runs `imgpress health` against the server. */
export async function operationsStage(s: Smoke, svc: Service, conversions: number): Promise<void> {
  await s.report.check(
    s.tag,
    "GET /internal/metrics: prom-client output, counts the conversions, passes promtool",
    async () => {
      const res = await svc.client.fetch("/internal/metrics");
      const text = await res.text();
      assert(res.status === 200, `HTTP ${res.status}`);
      const ok = [...text.matchAll(/^imgpress_conversions_total\{[^}]*outcome="ok"\} (\d+)$/gm)].reduce(
        (n, m) => n + Number(m[1]),
        0,
      );
      assert(ok === conversions, `imgpress_conversions_total{outcome="ok"} sums to ${ok}, not ${conversions}`);
      // Under qemu-user the emulated process reads 0 for its own resident memory; on real hardware it must be positive.
      const rss = s.t.emulated ? /^process_resident_memory_bytes \d/m : /^process_resident_memory_bytes [1-9]/m;
      assert(rss.test(text), "no process_resident_memory_bytes");
      if (!Bun.which("promtool"))
        return `${ok} conversions counted; promtool not installed (scripts/ci-setup.sh installs it), not checked`;
      const promtool = Bun.spawn(["promtool", "check", "metrics"], {
        stdin: new TextEncoder().encode(text),
        stdout: "pipe",
        stderr: "pipe",
      });
      const [out, err, code] = await Promise.all([
        new Response(promtool.stdout).text(),
        new Response(promtool.stderr).text(),
        promtool.exited,
      ]);
      assert(code === 0, `promtool check metrics: ${out}${err}`);
      return `${ok} conversions counted; promtool check metrics clean`;
    },
  );
  await s.report.check(s.tag, "imgpress health → exit 0 against the running server", async () => {
    const { code, stdout } = await cli(s, ["health", "--url", `${svc.url}/health/ready`], svc.env);
    assert(code === 0, `exit ${code}: ${stdout}`);
    return stdout.trim().slice(0, 60);
  });
}
