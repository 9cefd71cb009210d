// Bun.build plugin that makes sharp and libsql work inside a single executable built for
// one target CPU. Both packages pick their native addon at run time from node_modules,
// which a moved executable does not have. The plugin rewrites those exact places in
// their source; if the text is not found (a dependency update changed it) the build
// stops instead of producing a binary that fails at start.

import { createHash } from "node:crypto";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import type { BunPlugin } from "bun";
import type { ResolvedTarget } from "./targets.ts";

const RUNTIME = join(import.meta.dir, "native-runtime.ts");
// Virtual modules, one per addon, each exporting load(): the addon's exports.
const NS = "imgpress-native";
const SHARP = "imgpress:native-sharp";
const LIBSQL = "imgpress:native-libsql";

/** Files each rewrite was applied to, so the caller can insist that all happened. */
export type NativeReport = Record<"sharpAddon" | "sharpVersions" | "libsqlAddon", string[]>;

/** An empty report. */
export const newReport = (): NativeReport => ({ sharpAddon: [], sharpVersions: [], libsqlAddon: [] });

// sharp resolves these at run time against node_modules beside the working folder, so
// in an executable they would load whatever is there (even a .node from
// ../src/build/Release). They become a MODULE_NOT_FOUND error, which sharp expects.
const RUNTIME_REQUIRE = /\brequire\((`[^`]*`|"@img\/[^"]*"|'@img\/[^']*')\)/g;
const NOT_BUNDLED =
  'const __imgpressNotBundled = (id) => { const e = new Error(id + " is not in this executable"); e.code = "MODULE_NOT_FOUND"; throw e; };\n';

/** Replaces exactly one occurrence of `find` in `text`; throws naming `file` otherwise. */
function replaceOnce(text: string, find: string, replacement: string, file: string): string {
  const count = text.split(find).length - 1;
  if (count !== 1) {
    throw new Error(
      `native-plugin: expected exactly one ${JSON.stringify(find)} in ${file}, found ${count}; ` +
        "the package changed, update scripts/build/native-plugin.ts",
    );
  }
  return text.replace(find, () => replacement);
}

/** Lists `dir` and returns the single file name matching `re`; throws otherwise. */
function single(dir: string, re: RegExp): string {
  const hits = readdirSync(dir).filter((n) => re.test(n));
  if (hits.length !== 1) throw new Error(`native-plugin: expected one file matching ${re} in ${dir}, found [${hits}]`);
  return hits[0]!;
}

/** A file to embed: where it is now and where it goes in the extraction folder. */
interface FileSpec {
  abs: string;
  rel: string;
}

/**
 * Source of a virtual module that embeds `files` (the first is the addon) and exports
 * `load()`, which extracts them once into a folder named by package, version, CPU and
 * content hash (so another build never reuses a stale copy) and loads the addon.
 */
async function loaderSource(name: string, version: string, files: FileSpec[]): Promise<string> {
  const hash = createHash("sha256");
  for (const f of files) hash.update(f.rel).update(await Bun.file(f.abs).bytes());
  const key = `${name}-${version}-${hash.digest("hex").slice(0, 16)}`;
  const entries = files.map((f, i) => `{ src: f${i}, rel: ${JSON.stringify(f.rel)}, size: ${statSync(f.abs).size} }`);
  return [
    `import { loadNative } from ${JSON.stringify(RUNTIME)};`,
    ...files.map((f, i) => `import f${i} from ${JSON.stringify(f.abs)} with { type: "file" };`),
    "let loaded;",
    "export function load() {",
    `  return (loaded ??= loadNative({ key: ${JSON.stringify(key)}, addon: ${JSON.stringify(files[0]!.rel)}, files: [${entries.join(", ")}] }));`,
    "}",
  ].join("\n");
}

/** Version from the package.json in `dir`. */
async function version(dir: string): Promise<string> {
  return ((await Bun.file(join(dir, "package.json")).json()) as { version: string }).version;
}

/**
 * Loader for sharp's addon plus libvips. They keep their package-relative layout so the
 * addon's RPATH `$ORIGIN/../../sharp-libvips-linux-<arch>/lib` finds libvips.
 */
async function sharpLoader(t: ResolvedTarget): Promise<string> {
  const vipsPkg = `sharp-libvips-linux-${t.arch}`;
  const addonName = single(join(t.sharpDir, "lib"), new RegExp(`^sharp-linux-${t.arch}-.+\\.node$`));
  const libs = readdirSync(join(t.libvipsDir, "lib")).filter((n) => /\.so(\.|$)/.test(n));

  // The addon must name a library we ship and find it through the layout we recreate.
  const addonPath = join(t.sharpDir, "lib", addonName);
  const addonBytes = Buffer.from(await Bun.file(addonPath).bytes());
  const rpath = `$ORIGIN/../../${vipsPkg}/lib`;
  if (!addonBytes.includes(rpath)) throw new Error(`native-plugin: ${addonPath} has no RPATH ${rpath}`);
  if (!libs.some((n) => n.startsWith("libvips-cpp.so") && addonBytes.includes(n))) {
    throw new Error(`native-plugin: ${addonPath} links none of [${libs}] in ${t.libvipsDir}/lib`);
  }

  return loaderSource(`sharp-linux-${t.arch}`, await version(t.sharpDir), [
    { abs: addonPath, rel: `sharp-linux-${t.arch}/lib/${addonName}` },
    ...libs.map((n) => ({ abs: join(t.libvipsDir, "lib", n), rel: `${vipsPkg}/lib/${n}` })),
  ]);
}

/** Loader for libsql's addon (its package's `main`, a self-contained .node file). */
async function libsqlLoader(t: ResolvedTarget): Promise<string> {
  const { main } = (await Bun.file(join(t.libsqlDir, "package.json")).json()) as { main?: string };
  if (!main?.endsWith(".node")) throw new Error(`native-plugin: ${t.libsqlDir}/package.json main is not a .node file`);
  return loaderSource(`libsql-linux-${t.arch}-gnu`, await version(t.libsqlDir), [
    { abs: join(t.libsqlDir, main), rel: main },
  ]);
}

/** Creates the plugin for one target; `report` records which files it rewrote. */
export function nativePlugin(t: ResolvedTarget, report: NativeReport): BunPlugin {
  return {
    name: "imgpress-native",
    setup(build) {
      // libsql/index.js ends requireNative() with `return require(`@libsql/${target}`);`,
      // choosing the package at run time. It becomes our loader, which (unlike Bun's
      // own embedding of a statically required .node, which extracts to $TMPDIR) uses
      // the same cache folder and noexec check as sharp.
      build.onLoad({ filter: /[\\/]node_modules[\\/]libsql[\\/]index\.js$/ }, async ({ path }) => {
        const text = await Bun.file(path).text();
        report.libsqlAddon.push(path);
        const call = `return require("${LIBSQL}").load();`;
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the text of the library's source, matched as written
        return { loader: "js", contents: replaceOnce(text, "return require(`@libsql/${target}`);", call, path) };
      });

      // sharp/dist/sharp.{mjs,cjs}: a switch over the run-time platform requires
      // "@img/sharp-<platform>/sharp.node". Ours becomes a call into our loader.
      build.onLoad({ filter: /[\\/]node_modules[\\/]sharp[\\/]dist[\\/]sharp\.[cm]js$/ }, async ({ path }) => {
        let text = await Bun.file(path).text();
        text = replaceOnce(text, `require("@img/sharp-linux-${t.arch}/sharp.node")`, "__imgpressLoadSharp()", path);
        const header = path.endsWith(".mjs")
          ? `import { load as __imgpressLoadSharp } from "${SHARP}";\n`
          : `const { load: __imgpressLoadSharp } = require("${SHARP}");\n`;
        report.sharpAddon.push(path);
        return {
          loader: "js",
          contents: header + NOT_BUNDLED + text.replace(RUNTIME_REQUIRE, "__imgpressNotBundled($1)"),
        };
      });

      // sharp/dist/utility.{mjs,cjs} reads libvips' versions.json at run time; without it
      // sharp.versions lacks the libraries and sharp.format.heif gets other aliases than
      // when run from node_modules. Embed the target's copy.
      build.onLoad({ filter: /[\\/]node_modules[\\/]sharp[\\/]dist[\\/]utility\.[cm]js$/ }, async ({ path }) => {
        let text = await Bun.file(path).text();
        text = replaceOnce(
          text,
          // biome-ignore lint/suspicious/noTemplateCurlyInString: the text of the library's source, matched as written
          "require(`@img/sharp-libvips-${runtimePlatform}/versions`)",
          "__imgpressVersions",
          path,
        );
        const json = JSON.stringify(join(t.libvipsDir, "versions.json"));
        const header = path.endsWith(".mjs")
          ? `import __imgpressVersions from ${json} with { type: "json" };\n`
          : `const __imgpressVersions = require(${json});\n`;
        report.sharpVersions.push(path);
        return {
          loader: "js",
          contents: header + NOT_BUNDLED + text.replace(RUNTIME_REQUIRE, "__imgpressNotBundled($1)"),
        };
      });

      build.onResolve({ filter: /^imgpress:native-(sharp|libsql)$/ }, ({ path }) => ({ path, namespace: NS }));
      build.onLoad({ filter: /.*/, namespace: NS }, async ({ path }) => ({
        loader: "js",
        contents: path === SHARP ? await sharpLoader(t) : await libsqlLoader(t),
      }));
    },
  };
}
