// Stage "noexec": a cache folder on a noexec mount stops the binary with a clear error.
import { rmSync } from "node:fs";
import { join } from "node:path";
import { cli, type Smoke } from "./context.ts";
import { noexecDir } from "./folders.ts";
import { assert } from "./report.ts";

/** Runs `keys list` (which loads the native libraries) with IMGPRESS_CACHE_DIR on a noexec mount, when there is one and the binary runs natively. */
export async function noexecStage(s: Smoke): Promise<void> {
  // qemu-user maps code itself and ignores noexec, so this only means something natively.
  const noexec = s.t.emulated ? undefined : noexecDir();
  if (!noexec) return;
  await s.report.check(s.tag, `IMGPRESS_CACHE_DIR on a noexec mount (${noexec.dir}) → clear error`, async () => {
    const r = await cli(s, ["keys", "list", "--data-dir", join(noexec.dir, "data")], {
      IMGPRESS_CACHE_DIR: join(noexec.dir, "cache"),
    });
    assert(r.code !== 0, "started although its libraries cannot be mapped executable");
    assert(
      /noexec/.test(r.stderr) && /IMGPRESS_CACHE_DIR/.test(r.stderr),
      `stderr does not explain it: ${r.stderr.trim().slice(0, 300)}`,
    );
    return `exit ${r.code}: ${r.stderr.trim().split("\n")[0]!.slice(0, 110)}…`;
  });
  rmSync(noexec.dir, { recursive: true, force: true });
}
