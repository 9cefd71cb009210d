// Bun's `with { type: "file" }` import yields the asset's path (embedded in a compiled binary).
declare module "*/dist/browser/standalone.js" {
  const path: string;
  export default path;
}
