// Bun.build plugin: @elysiajs/swagger imports @scalar/themes for one CSS string (its default
// theme), and that package's index pulls in @scalar/types and zod, which the executable would
// evaluate at every start (~10–15 ms; bench/README.md, "Start-up"). The alias serves the same
// string from the theme's own file and leaves the rest out of the executable.
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import type { BunPlugin } from "bun";

/** Resolves `@scalar/themes` to a module exporting only `elysiajsTheme`, from the installed package's preset file. */
export function scalarThemePlugin(root: string): BunPlugin {
  const preset = join(
    dirname(Bun.resolveSync("@scalar/themes", join(root, "node_modules/@elysiajs/swagger/"))),
    "presets/elysiajs.css2.js",
  );
  // A newer @scalar/themes may move the file: fail the build rather than ship a docs page without its theme.
  if (!existsSync(preset))
    throw new Error(`scalar-theme-plugin: ${preset} not found; check how @elysiajs/swagger imports @scalar/themes`);
  return {
    name: "imgpress-scalar-theme",
    setup(build) {
      build.onResolve({ filter: /^@scalar\/themes$/ }, () => ({
        path: "elysiajs-theme",
        namespace: "imgpress-scalar-theme",
      }));
      build.onLoad({ filter: /.*/, namespace: "imgpress-scalar-theme" }, () => ({
        contents: `export { default as elysiajsTheme } from ${JSON.stringify(preset)};`,
        loader: "js",
      }));
    },
  };
}
