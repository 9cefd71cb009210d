// Where the idle memory of the server goes: a Bun process that loads only part of the server
// (argv[2], comma list: sharp, sharp-init, elysia, db, app), prints "ready" and waits. The bench
// reads its RSS to compare with the real server's.
const parts = new Set((process.argv[2] ?? "").split(",").filter(Boolean));
if (parts.has("sharp") || parts.has("sharp-init")) {
  const { default: sharp } = await import("sharp");
  sharp.cache(false);
  // libvips allocates its thread pool and format tables on first use, not on load.
  if (parts.has("sharp-init"))
    await sharp({ create: { width: 8, height: 8, channels: 3, background: "#fff" } })
      .webp()
      .toBuffer();
}
if (parts.has("elysia")) await import("elysia");
if (parts.has("db")) {
  await import("@libsql/client");
  await import("drizzle-orm/libsql");
}
if (parts.has("app")) await import("../../src/app.ts");
console.log("ready");
setInterval(() => {}, 1 << 30);

export {};
