// Builds the single-file executables: dist/imgpress (linux-x64, glibc),
// dist/imgpress-linux-arm64 (glibc) and dist/SHA256SUMS. Run with `npm run build`.
// Needs only `npm ci` first: what the arm64 build needs is fetched into .build-cache.
// Tests that need the executable import `buildTarget` and build the host's alone.
import { createHash } from "node:crypto";
import { mkdirSync, rmSync, statSync } from "node:fs";
import { basename, join, relative, resolve } from "node:path";
import { nativePlugin, newReport } from "./build/native-plugin.ts";
import { scalarThemePlugin } from "./build/scalar-theme-plugin.ts";
import { resolveTarget, type TargetSpec } from "./build/targets.ts";

/** The program's entry point, relative to the project root. */
const ENTRY = "src/main.ts";

const TARGETS: TargetSpec[] = [
  { arch: "x64", outfile: "dist/imgpress" },
  { arch: "arm64", outfile: "dist/imgpress-linux-arm64" },
];

const ROOT = join(import.meta.dir, "..");
const CACHE = join(ROOT, ".build-cache", "npm");
const SUMS = "dist/SHA256SUMS";
// ELF e_machine values: a wrong base executable would otherwise go unnoticed until run.
const ELF_MACHINE = { x64: 62, arm64: 183 } as const;

const step = (msg: string) => console.log(`build: ${msg}`);
const mib = (bytes: number) => `${(bytes / 1048576).toFixed(1)} MiB`;

/** The commit being built, as `--version` shows it after the release ("0.1.0+1a2b3c4d5e"; "-dirty" when the tree has changes; "unknown" outside a git clone). */
export function sourceCommit(): string {
  const described = Bun.spawnSync(["git", "describe", "--always", "--dirty", "--abbrev=10"], {
    cwd: ROOT,
    stderr: "ignore",
  });
  return described.success ? described.stdout.toString().trim() : "unknown";
}

/** Builds one executable; `spec.outfile` is relative to the project root or absolute. */
export async function buildTarget(spec: TargetSpec): Promise<void> {
  const t0 = performance.now();
  const t = await resolveTarget(ROOT, spec, CACHE);
  step(
    `${spec.arch}: base ${relative(ROOT, t.executablePath)}, addons from ${relative(ROOT, t.sharpDir)}, ${relative(ROOT, t.libsqlDir)}`,
  );

  const report = newReport();
  const outfile = resolve(ROOT, spec.outfile);
  const result = await Bun.build({
    entrypoints: [join(ROOT, ENTRY)],
    target: "bun",
    format: "esm",
    // Bytecode roughly halves start-up. Identifiers stay unminified: renaming broke
    // Elysia before (it reads function/parameter names).
    bytecode: true,
    minify: { whitespace: true, syntax: true, identifiers: false },
    // --compile embeds the source map, so stack traces name source files and lines.
    sourcemap: "linked",
    compile: {
      target: t.bunTarget,
      executablePath: t.executablePath,
      outfile,
      // A bunfig.toml in the server's working folder must not change how it runs.
      autoloadBunfig: false,
    },
    // The executable tells which commit it was built from (src/core/version.ts): every build of one release reads alike otherwise.
    define: { IMGPRESS_BUILD_COMMIT: JSON.stringify(sourceCommit()) },
    plugins: [nativePlugin(t, report), scalarThemePlugin(ROOT)],
    throw: false,
  });
  if (!result.success) {
    for (const log of result.logs) console.error(log);
    throw new Error(`build of ${spec.outfile} failed`);
  }
  for (const log of result.logs) if (log.level === "warning") console.warn(log);
  // The executable already holds its source map; the copy Bun writes beside it is noise.
  rmSync(`${outfile}.map`, { force: true });
  // A build that never reached sharp's or libsql's loading code would fail at run time
  // instead (e.g. the entry stopped importing them, or the packages moved that code).
  const missing = Object.entries(report).filter(([, files]) => files.length === 0);
  if (missing.length > 0) throw new Error(`native-plugin rewrites not applied: ${missing.map(([k]) => k).join(", ")}`);

  const header = await Bun.file(outfile).slice(0, 20).bytes();
  const machine = header[18]! | (header[19]! << 8);
  if (machine !== ELF_MACHINE[spec.arch])
    throw new Error(`${spec.outfile} is ELF machine ${machine}, not ${spec.arch}`);
  step(
    `${spec.arch}: ${spec.outfile} ${mib(statSync(outfile).size)} in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
}

/** Removes this script's outputs, so a failed build leaves no binary behind. */
function clean(): void {
  for (const f of [...TARGETS.flatMap((t) => [t.outfile, `${t.outfile}.map`]), SUMS])
    rmSync(join(ROOT, f), { force: true });
}

async function main(): Promise<void> {
  step(`bun ${Bun.version}+${Bun.revision.slice(0, 9)}, entry ${ENTRY}`);
  mkdirSync(join(ROOT, "dist"), { recursive: true });
  clean();

  for (const spec of TARGETS) await buildTarget(spec);

  const lines: string[] = [];
  for (const { outfile } of TARGETS) {
    const digest = createHash("sha256")
      .update(await Bun.file(join(ROOT, outfile)).bytes())
      .digest("hex");
    lines.push(`${digest}  ${basename(outfile)}`);
  }
  await Bun.write(join(ROOT, SUMS), `${lines.join("\n")}\n`);
  step(`${SUMS} written (check with: cd dist && sha256sum -c SHA256SUMS)`);
  for (const { outfile } of TARGETS)
    console.log(`  ${mib(statSync(join(ROOT, outfile)).size).padStart(10)}  ${outfile}`);
}

if (import.meta.main) {
  await main().catch((err: unknown) => {
    clean();
    console.error(`build: FAILED: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  });
}
