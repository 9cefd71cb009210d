// imgpress-<version>-linux-<cpu>.tar.gz: the executable, LICENSE, a short README, the systemd unit
// and the settings example, flat, to unpack into an empty folder.
import { readFileSync } from "node:fs";
import { type Arch, gzip, projectFile, type Release, unitFile } from "./context.ts";
import { ENV_EXAMPLE } from "./env-example.ts";
import { tar } from "./tar.ts";

/** The archive's name. */
export const archiveName = (r: Release, a: Arch) => `imgpress-${r.version}-linux-${a.node}.tar.gz`;

function readme(r: Release, a: Arch): string {
  return `imgpress ${r.version} for Linux ${a.node === "x64" ? "x86-64" : "arm64"} (glibc 2.28 or later)
JPEG/PNG to WebP/AVIF conversion service: one executable, no other files needed.

  ./imgpress --version
  IMGPRESS_SMTP_URL='smtps://user:password@smtp.example.com:465' IMGPRESS_MAIL_FROM='imgpress@example.com' ./imgpress

It listens on https://0.0.0.0:8443 with a generated certificate (imgpress-data/tls/cert.pem) and
keeps its data in ./imgpress-data. Without IMGPRESS_SMTP_URL the one-time codes are printed to its
log. Every setting: ./imgpress --help, or imgpress.env.example.

As a service: imgpress.service is a hardened systemd unit; the steps to install it are at its top.
On Debian and Ubuntu the .deb of the same release does all of that for you.

Files: imgpress (the executable), imgpress.service, imgpress.env.example, LICENSE (MIT; the
libraries inside the executable keep their own licences: sharp-libvips' README lists them).
`;
}

/** The archive's bytes. */
export function archive(r: Release, a: Arch): Uint8Array {
  const text = (s: string) => new TextEncoder().encode(s);
  return gzip(
    tar(
      [
        { type: "file", path: "imgpress", mode: 0o755, data: readFileSync(a.binary) },
        { type: "file", path: "LICENSE", mode: 0o644, data: projectFile("LICENSE") },
        { type: "file", path: "README", mode: 0o644, data: text(readme(r, a)) },
        { type: "file", path: "imgpress.service", mode: 0o644, data: text(unitFile("/usr/local/bin/imgpress")) },
        { type: "file", path: "imgpress.env.example", mode: 0o644, data: projectFile(ENV_EXAMPLE) },
      ],
      r.epoch,
    ),
  );
}
