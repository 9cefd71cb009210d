// The archives as a user takes them: downloaded with SHA256SUMS into an empty folder, checked,
// unpacked, started, a key obtained by e-mail and a photo converted. The arm64 one is unpacked and
// its executable asked for its version under qemu-user (the smoke test converts with it).
import { copyFileSync, existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { multipart, startService } from "../../test/support/imgpress.ts";
import { checkImage } from "../smoke/photo.ts";
import { assert } from "../smoke/report.ts";
import { type Ctx, emptyFolder, ok } from "./context.ts";
import { readmeRecipe } from "./readme.ts";

const FILES = ["LICENSE", "README", "imgpress", "imgpress.env.example", "imgpress.service"];

/**
 * Puts one archive and SHA256SUMS into an empty folder, as a download would, and runs the README's
 * archive recipe there as printed, all but its last line (which starts the server with a mail
 * server of the reader's; the test starts it itself, with the SMTP sink). Returns the folder.
 */
async function unpack(ctx: Ctx, name: string): Promise<string> {
  const dir = emptyFolder(ctx, "archive");
  copyFileSync(join(ctx.dir, name), join(dir, name));
  copyFileSync(join(ctx.dir, "SHA256SUMS"), join(dir, "SHA256SUMS"));
  const recipe = readmeRecipe("Anywhere else");
  assert(
    /IMGPRESS_SMTP_URL=.* \.\/imgpress$/.test(recipe.at(-1)!),
    `the README's archive recipe no longer ends by starting ./imgpress: ${recipe.at(-1)}`,
  );
  // The arm64 executable runs under qemu here.
  const prelude = name.includes("arm64") ? 'qemu() { qemu-aarch64-static -L /usr/aarch64-linux-gnu "$@"; }\n' : "";
  const steps = recipe.slice(0, -1).map((l) => (prelude && l.startsWith("./imgpress") ? `qemu ${l}` : l));
  const said = await ok(["bash", "-euo", "pipefail", "-c", `${prelude}${steps.join("\n")}`], { cwd: dir });
  assert(
    said.includes(`${name}: OK`) && said.includes(`imgpress ${ctx.version}+`),
    `the recipe printed: ${said.trim()}`,
  );
  const got = readdirSync(dir)
    .filter((f) => f !== name && f !== "SHA256SUMS")
    .sort();
  assert(JSON.stringify(got) === JSON.stringify(FILES), `unpacked ${got.join(", ")}; expected ${FILES.join(", ")}`);
  return dir;
}

export async function archiveStage(ctx: Ctx): Promise<void> {
  const tag = "archive";
  const x64 = `imgpress-${ctx.version}-linux-x64.tar.gz`;
  const dir = await ctx.report.check(
    tag,
    `${x64}: the README's recipe in an empty folder (sha256sum -c, tar xzf, --version)`,
    () => unpack(ctx, x64),
    () => FILES.join(", "),
  );
  if (dir) {
    await ctx.report.check(tag, "./imgpress --version and the unit name the release", async () => {
      const said = await ok(["./imgpress", "--version"], { cwd: dir });
      assert(said.startsWith(`imgpress ${ctx.version}+`), `--version: ${said.trim()}`);
      const unit = readFileSync(join(dir, "imgpress.service"), "utf8");
      assert(
        /^ExecStart=\/usr\/local\/bin\/imgpress serve$/m.test(unit),
        "imgpress.service has no ExecStart=/usr/local/bin/imgpress serve",
      );
      return said.trim();
    });
    await ctx.report.check(tag, "./imgpress started from the folder: e-mailed code, key, JPEG → WebP", async () => {
      const env = { PATH: "/usr/bin:/bin", HOME: join(dir, "home"), LANG: "C.UTF-8" };
      const svc = await startService({
        launch: { runtime: "binary", file: join(dir, "imgpress") },
        dataDir: false,
        cwd: dir,
        baseEnv: env,
        env: { IMGPRESS_SMTP_URL: ctx.sink.url },
      });
      try {
        const keys = await svc.client.obtainKeys(ctx.sink, "archive@example.com");
        const res = await svc.client.convert(
          keys,
          "bearer",
          multipart({ format: "webp" }, ctx.photo.bytes, "photo.jpg"),
        );
        const said = await checkImage(res, "webp", ctx.photo.width, ctx.photo.height, ctx.photo.bytes.length);
        assert(existsSync(join(dir, "imgpress-data", "imgpress.db")), "no ./imgpress-data/imgpress.db");
        const code = await svc.stop();
        assert(code === 0, `exit ${code} after SIGTERM`);
        return `${said}; data in ./imgpress-data`;
      } finally {
        svc.proc.kill("SIGKILL");
      }
    });
  }
  const arm = `imgpress-${ctx.version}-linux-arm64.tar.gz`;
  await ctx.report.check(tag, `${arm}: the README's recipe, --version under qemu-aarch64-static`, async () => {
    await unpack(ctx, arm);
    return "checked, unpacked, its version";
  });
}
