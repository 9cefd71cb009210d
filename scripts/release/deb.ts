// imgpress_<version>_<arch>.deb, built with Debian's own dpkg-deb from a staging folder: the
// executable in /usr/bin, the unit of deploy/ in /lib/systemd/system, the settings example as the
// conffile /etc/imgpress/imgpress.env, and the maintainer scripts of deploy/debian/.
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { type Arch, gzip, projectFile, type Release, unitFile } from "./context.ts";
import { ENV_EXAMPLE } from "./env-example.ts";

/** The package's name. */
export const debName = (r: Release, a: Arch) => `imgpress_${r.version}_${a.debian}.deb`;

const SCRIPTS = ["postinst", "prerm", "postrm"];

// Each override is a rule Debian's tools apply to programs built from source, which cannot apply to
// an executable that carries its program and libraries inside itself.
const OVERRIDES = [
  "# bun build --compile appends the program to the executable; strip would cut it off and leave a bare Bun.",
  "imgpress: unstripped-binary-or-object [usr/bin/imgpress]",
  "# The runtime inside is Bun's released build, linked without PIE by Bun; it is not rebuilt here.",
  "imgpress: hardening-no-pie [usr/bin/imgpress]",
  "# The runtime inside is Bun's released build, linked without RELRO by Bun; it is not rebuilt here.",
  "imgpress: hardening-no-relro [usr/bin/imgpress]",
  "# The embedded sharp/libvips and libSQL are the builds their projects ship on npm, unpacked at start.",
  "imgpress: embedded-library *",
];
function debianChangelog(r: Release): string {
  const date = new Date(r.epoch * 1000).toUTCString().replace("GMT", "+0000");
  return `imgpress (${r.version}) unstable; urgency=medium\n\n  * Release ${r.version} (commit ${r.commit}).\n\n -- ${r.maintainer}  ${date}\n`;
}

// Short on purpose: `imgpress --help` is generated from the settings table and cannot drift.
function manPage(r: Release): string {
  const date = new Date(r.epoch * 1000).toISOString().slice(0, 10);
  return `.TH IMGPRESS 1 "${date}" "imgpress ${r.version}" "User Commands"
.SH NAME
imgpress \\- self-hosted JPEG/PNG to WebP/AVIF conversion service
.SH SYNOPSIS
.B imgpress
[\\fIcommand\\fR] [\\fIoptions\\fR]
.SH DESCRIPTION
.B imgpress
serves image conversion over HTTPS (the default command,
.BR serve )
and administers its keys, staff, backups and database
.RB ( keys ", " staff ", " backup ", " restore ", " migrate ", " health ", " audit ", " settings ).
Every setting is an environment variable with a matching option;
.B imgpress \\-\\-help
lists the commands and every setting with its meaning.
.SH FILES
.TP
.I /etc/imgpress/imgpress.env
the service's settings, one KEY=value line each, all listed there commented out
.TP
.I /var/lib/imgpress
the database, the master key and the generated certificate (tls/cert.pem)
.TP
.I /var/cache/imgpress
the native libraries unpacked at start
.SH SEE ALSO
.BR systemctl (1),
.BR journalctl (1)
`;
}

function control(r: Release, a: Arch, installedKiB: number): string {
  return [
    "Package: imgpress",
    `Version: ${r.version}`,
    `Architecture: ${a.debian}`,
    `Maintainer: ${r.maintainer}`,
    `Installed-Size: ${installedKiB}`,
    // The C++ runtime is what the embedded libvips links against once unpacked.
    "Depends: adduser, libc6 (>= 2.28), libgcc-s1, libstdc++6",
    "Section: web",
    "Priority: optional",
    ...(r.source ? [`Homepage: ${r.source}`] : []),
    `Description: self-hosted JPEG/PNG to WebP/AVIF conversion service`,
    " imgpress converts JPEG and PNG images to WebP and AVIF over HTTPS for",
    " websites and their plugins. Clients obtain API keys with a one-time code",
    " sent by e-mail; staff see usage and keys on a dashboard under /internal/.",
    " .",
    " The service runs as the imgpress user with its data in /var/lib/imgpress;",
    " its settings are in /etc/imgpress/imgpress.env.",
    "",
  ].join("\n");
}

function files(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((f) => statSync(join(dir, f)).isFile())
    .sort();
}

/** Builds the package into `r.out` and returns its path. */
export function buildDeb(r: Release, a: Arch): string {
  const stage = mkdtempSync(join(tmpdir(), `imgpress-deb-${a.debian}-`));
  try {
    const put = (path: string, data: Uint8Array | string, mode = 0o644) => {
      const to = join(stage, path);
      mkdirSync(dirname(to), { recursive: true, mode: 0o755 });
      writeFileSync(to, data);
      chmodSync(to, mode);
    };
    mkdirSync(join(stage, "usr/bin"), { recursive: true });
    copyFileSync(a.binary, join(stage, "usr/bin/imgpress"));
    chmodSync(join(stage, "usr/bin/imgpress"), 0o755);
    put("lib/systemd/system/imgpress.service", unitFile("/usr/bin/imgpress"));
    put("etc/imgpress/imgpress.env", projectFile(ENV_EXAMPLE));
    put("usr/share/doc/imgpress/copyright", projectFile("deploy/debian/copyright"));
    put("usr/share/doc/imgpress/changelog.gz", gzip(new TextEncoder().encode(debianChangelog(r)), 9));
    put("usr/share/man/man1/imgpress.1.gz", gzip(new TextEncoder().encode(manPage(r)), 9));
    put("usr/share/lintian/overrides/imgpress", `${OVERRIDES.join("\n")}\n`);

    const payload = files(stage);
    const md5 = payload.map(
      (f) => `${new Bun.CryptoHasher("md5").update(readFileSync(join(stage, f))).digest("hex")}  ${f}`,
    );
    const kib = payload.reduce((n, f) => n + Math.ceil(statSync(join(stage, f)).size / 1024), 0);
    put("DEBIAN/control", control(r, a, kib));
    put("DEBIAN/conffiles", "/etc/imgpress/imgpress.env\n");
    put("DEBIAN/md5sums", `${md5.join("\n")}\n`);
    for (const s of SCRIPTS) put(`DEBIAN/${s}`, projectFile(`deploy/debian/${s}`), 0o755);
    // Folders dpkg-deb records as they are on disk: 0755 whatever the umask.
    for (const d of readdirSync(stage, { recursive: true, encoding: "utf8" }))
      if (statSync(join(stage, d)).isDirectory()) chmodSync(join(stage, d), 0o755);
    chmodSync(stage, 0o755);

    const out = join(r.out, debName(r, a));
    // gzip rather than dpkg-deb's default xz: several times faster on a 146 MiB executable.
    const built = Bun.spawnSync(["dpkg-deb", "--root-owner-group", "-Zgzip", "-z6", "--build", stage, out], {
      env: { ...process.env, SOURCE_DATE_EPOCH: String(r.epoch) },
      stderr: "pipe",
      stdout: "pipe",
    });
    if (!built.success) throw new Error(`dpkg-deb: ${built.stderr.toString().trim()}`);
    return out;
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}
