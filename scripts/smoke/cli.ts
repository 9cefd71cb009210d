// Stage "cli": --version and --help (which unpack nothing), and the native libraries unpacked once
// into the cache by the first command that needs them.
import { existsSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { cli, type Smoke } from "./context.ts";
import { assertOneExtraction, cacheEntries } from "./folders.ts";
import { assert } from "./report.ts";

/** Checks `--version`, `--help` and the extraction cache a command fills; returns the cache's entries for later comparison. */
export async function cliStage(s: Smoke): Promise<{ summary: string; names: string[] }> {
  await s.report.check(s.tag, "--version", async () => {
    const r = await cli(s, ["--version"]);
    assert(r.code === 0, `exit ${r.code}: ${r.stderr.trim()}`);
    assert(
      r.stdout.trim().startsWith(`imgpress ${s.version} `),
      `prints ${JSON.stringify(r.stdout.trim())}, expected "imgpress ${s.version} (…)"`,
    );
    return r.stdout.trim();
  });
  await s.report.check(s.tag, "--help", async () => {
    const r = await cli(s, ["--help"]);
    assert(r.code === 0, `exit ${r.code}: ${r.stderr.trim()}`);
    for (const word of ["Usage:", "keys list", "IMGPRESS_PORT", "IMGPRESS_DATA_DIR", "IMGPRESS_SMTP_URL"]) {
      assert(r.stdout.includes(word), `help text lacks ${JSON.stringify(word)}`);
    }
    return `${r.stdout.split("\n").length} lines`;
  });
  // A read-only cache folder (a package's or an image's, run by another user) must not stop them:
  // they answer before the native libraries are loaded.
  await s.report.check(
    s.tag,
    "--version and --help unpack nothing, even with an unwritable IMGPRESS_CACHE_DIR",
    async () => {
      for (const args of [["--version"], ["--help"]]) {
        const r = await cli(s, args, { IMGPRESS_CACHE_DIR: "/proc/imgpress-unwritable" });
        assert(
          r.code === 0 && r.stdout.includes("imgpress"),
          `${args[0]}: exit ${r.code}: ${r.stderr.trim().slice(0, 300)}`,
        );
      }
      assert(!existsSync(s.cacheDir), `${s.cacheDir} exists: --version or --help unpacked the native libraries`);
      return "exit 0, nothing unpacked";
    },
  );
  await s.report.check(s.tag, "a command that opens the database unpacks the native libraries", async () => {
    const r = await cli(s, ["keys", "list", "--data-dir", join(s.tmp, "no-data")]);
    assert(r.code === 1 && r.stderr.includes("no database"), `exit ${r.code}: ${r.stderr.trim().slice(0, 300)}`);
    assert(existsSync(s.cacheDir), `${s.cacheDir} was not made`);
    return `cache in ${s.cacheDir}`;
  });
  // No usable cache folder (a container uid without a home): the last resort is the data folder's
  // cache, the one --data-dir names, and a data folder made there is owner-only.
  await s.report.check(s.tag, "no cache folder but the data folder: --data-dir's, made owner-only", async () => {
    const data = join(s.tmp, "flag-data", "data");
    // Given twice, the last one counts, as for the command itself.
    const first = join(s.tmp, "flag-data", "first");
    const r = await cli(s, ["keys", "list", "--data-dir", first, `--data-dir=${data}`], {
      XDG_CACHE_HOME: "",
      HOME: "/proc/imgpress-no-home",
    });
    assert(
      r.code === 1 && r.stderr.includes(`no database at ${join(data, "imgpress.db")}`),
      `exit ${r.code}: ${r.stderr.trim().slice(0, 300)}`,
    );
    assert(
      !existsSync(join(s.run, "imgpress-data")),
      "made ./imgpress-data in the working folder although --data-dir names another",
    );
    assert(existsSync(join(data, "cache")), `no cache in ${data}`);
    assert(!existsSync(first), `made ${first}, the --data-dir given first`);
    const mode = statSync(data).mode & 0o777;
    assert(mode === 0o700, `the data folder it made has mode ${mode.toString(8)}, not 700`);
    rmSync(join(s.tmp, "flag-data"), { recursive: true, force: true });
    return `cache in ${data}/cache, folder 0700`;
  });
  return s.report.must(
    s.tag,
    "cache: one extraction per library under $XDG_CACHE_HOME/imgpress",
    () => {
      const summary = assertOneExtraction(s.cacheDir, s.t.arch);
      assert(!existsSync(join(s.tmp, "home", ".cache")), "also wrote to $HOME/.cache although XDG_CACHE_HOME is set");
      return { summary, names: cacheEntries(s.cacheDir).names };
    },
    (v) => v.summary,
  );
}
