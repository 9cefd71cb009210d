// imgpress-<version>-oci.tar: an OCI image layout in one tar, written directly (JSON, one gzip
// layer per CPU, sha256 blobs), with one index holding the amd64 and the arm64 image. Each image is
// FROM scratch: the executable, the C/C++ runtime libraries it and its unpacked libraries link
// (copied from this Debian system, with their copyright files), a passwd entry for the non-root
// user, and /data and /cache owned by that user.
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { imageName, stopGraceS } from "./compose.ts";
import { type Arch, gzip, projectFile, type Release, sha256 } from "./context.ts";
import { type TarEntry, tar } from "./tar.ts";

/** The archive's name. */
export const ociName = (r: Release) => `imgpress-${r.version}-oci.tar`;

/** The user the service runs as in the image (distroless' "nonroot" number). */
export const IMAGE_UID = 65532;

// What `ldd` shows for the executable and for the unpacked sharp/libvips and libSQL addons.
const LIBRARIES = [
  "libc.so.6",
  "libm.so.6",
  "libpthread.so.0",
  "libdl.so.2",
  "librt.so.1",
  "libresolv.so.2",
  "libgcc_s.so.1",
  "libstdc++.so.6",
];

interface Blob {
  mediaType: string;
  digest: string;
  size: number;
  data: Uint8Array;
}

const blob = (mediaType: string, data: Uint8Array): Blob => ({
  mediaType,
  digest: `sha256:${sha256(data)}`,
  size: data.length,
  data,
});
const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
const text = (s: string) => new TextEncoder().encode(s);

function findLibrary(a: Arch, name: string): string {
  for (const dir of a.libDirs) if (existsSync(join(dir, name))) return realpathSync(join(dir, name));
  throw new Error(
    `${name} for ${a.debian} not found in ${a.libDirs.join(", ")} (scripts/ci-setup.sh installs the arm64 ones)`,
  );
}

function packageVersion(name: string): string {
  const r = Bun.spawnSync(["dpkg-query", "-W", `-f=\${Version}`, name], { stderr: "ignore" });
  if (!r.success) throw new Error(`Debian package ${name} is not installed (scripts/ci-setup.sh)`);
  return r.stdout.toString();
}

/** The root filesystem of one image, as layer entries. */
function rootfs(a: Arch): TarEntry[] {
  const dir = (path: string, mode = 0o755, uid = 0): TarEntry => ({ type: "dir", path, mode, uid, gid: uid });
  const file = (path: string, data: Uint8Array, mode = 0o644): TarEntry => ({ type: "file", path, mode, data });
  const libDir = `lib/${a.multiarch}`;
  const doc = "usr/share/doc";
  const sources = a.libPackages.map((p) => `${p} ${packageVersion(p)}`).join("\n");
  return [
    dir("cache", 0o700, IMAGE_UID),
    dir("data", 0o700, IMAGE_UID),
    dir("etc"),
    file("etc/group", text(`root:x:0:\nimgpress:x:${IMAGE_UID}:\n`)),
    file("etc/nsswitch.conf", text("passwd: files\ngroup: files\nhosts: files dns\n")),
    file(
      "etc/passwd",
      text(`root:x:0:0:root:/root:/sbin/nologin\nimgpress:x:${IMAGE_UID}:${IMAGE_UID}:imgpress:/data:/sbin/nologin\n`),
    ),
    dir("lib"),
    dir(libDir),
    ...LIBRARIES.map((name) => file(`${libDir}/${name}`, readFileSync(findLibrary(a, name)), 0o755)),
    file(`${libDir}/${a.loader.split("/").pop()}`, readFileSync(findLibrary(a, a.loader.split("/").pop()!)), 0o755),
    ...(a.loader.startsWith("lib64/") ? [dir("lib64")] : []),
    {
      type: "symlink",
      path: a.loader,
      target: a.loader.startsWith("lib64/")
        ? `../${libDir}/${a.loader.split("/").pop()}`
        : `${a.multiarch}/${a.loader.split("/").pop()}`,
    },
    dir("tmp", 0o1777),
    dir("usr"),
    dir("usr/bin"),
    file("usr/bin/imgpress", readFileSync(a.binary), 0o755),
    dir("usr/share"),
    dir(doc),
    dir(`${doc}/imgpress`),
    file(`${doc}/imgpress/copyright`, projectFile("deploy/debian/copyright")),
    file(`${doc}/imgpress/LICENSE`, projectFile("LICENSE")),
    file(
      `${doc}/imgpress/runtime-libraries`,
      text(
        `The C and C++ runtime libraries in /${libDir} are copied unchanged from these Debian 12 packages (sources: https://snapshot.debian.org, https://sources.debian.org); their copyright files are beside this one.\n${sources}\n`,
      ),
    ),
    ...a.libPackages.flatMap((p) => [
      dir(`${doc}/${p}`),
      file(`${doc}/${p}/copyright`, readFileSync(`/${doc}/${p}/copyright`)),
    ]),
  ];
}

/** OCI's annotation keys, used as the image's labels too. */
function labels(r: Release): Record<string, string> {
  return {
    "org.opencontainers.image.title": "imgpress",
    "org.opencontainers.image.description": r.description,
    "org.opencontainers.image.version": r.version,
    "org.opencontainers.image.revision": r.commit,
    "org.opencontainers.image.created": new Date(r.epoch * 1000).toISOString(),
    "org.opencontainers.image.licenses": r.license,
    ...(r.source ? { "org.opencontainers.image.source": r.source } : {}),
  };
}

function image(r: Release, a: Arch): { manifest: Blob; blobs: Blob[] } {
  const layerTar = tar(rootfs(a), r.epoch);
  const layer = blob("application/vnd.oci.image.layer.v1.tar+gzip", gzip(layerTar));
  const seconds = (s: number) => s * 1e9;
  const config = blob(
    "application/vnd.oci.image.config.v1+json",
    json({
      created: new Date(r.epoch * 1000).toISOString(),
      architecture: a.debian,
      ...(a.debian === "arm64" ? { variant: "v8" } : {}),
      os: "linux",
      config: {
        User: `${IMAGE_UID}:${IMAGE_UID}`,
        ExposedPorts: { "8443/tcp": {} },
        Env: [
          "PATH=/usr/bin",
          "IMGPRESS_DATA_DIR=/data",
          "IMGPRESS_CACHE_DIR=/cache",
          "IMGPRESS_HOST=0.0.0.0",
          "IMGPRESS_PORT=8443",
        ],
        Entrypoint: ["/usr/bin/imgpress"],
        Cmd: ["serve"],
        WorkingDir: "/data",
        Volumes: { "/data": {}, "/cache": {} },
        Labels: labels(r),
        StopSignal: "SIGTERM",
        // Not in the OCI config schema: Docker reads it from any image's config; podman only from
        // Docker-format images (run with --health-cmd there, as README says), compose from its file.
        Healthcheck: {
          Test: ["CMD", "/usr/bin/imgpress", "health"],
          Interval: seconds(30),
          Timeout: seconds(10),
          StartPeriod: seconds(30),
          Retries: 3,
        },
      },
      rootfs: { type: "layers", diff_ids: [`sha256:${sha256(layerTar)}`] },
      history: [
        {
          created: new Date(r.epoch * 1000).toISOString(),
          created_by: `imgpress scripts/release.ts (stop grace ${stopGraceS()} s)`,
        },
      ],
    }),
  );
  const manifest = blob(
    "application/vnd.oci.image.manifest.v1+json",
    json({
      schemaVersion: 2,
      mediaType: "application/vnd.oci.image.manifest.v1+json",
      config: { mediaType: config.mediaType, digest: config.digest, size: config.size },
      layers: [{ mediaType: layer.mediaType, digest: layer.digest, size: layer.size }],
      annotations: labels(r),
    }),
  );
  return { manifest, blobs: [config, layer, manifest] };
}

/** The OCI archive's bytes: oci-layout, index.json naming one image index, and the blobs. */
export function ociArchive(r: Release, arches: Arch[]): Uint8Array {
  const images = arches.map((a) => ({ a, ...image(r, a) }));
  const index = blob(
    "application/vnd.oci.image.index.v1+json",
    json({
      schemaVersion: 2,
      mediaType: "application/vnd.oci.image.index.v1+json",
      manifests: images.map(({ a, manifest }) => ({
        mediaType: manifest.mediaType,
        digest: manifest.digest,
        size: manifest.size,
        platform: { architecture: a.debian, os: "linux", ...(a.debian === "arm64" ? { variant: "v8" } : {}) },
      })),
      annotations: labels(r),
    }),
  );
  const top = {
    schemaVersion: 2,
    mediaType: "application/vnd.oci.image.index.v1+json",
    manifests: [
      {
        mediaType: index.mediaType,
        digest: index.digest,
        size: index.size,
        // The name `podman load` and `docker load` give the image (a tag alone would leave it unnamed in podman).
        annotations: {
          "org.opencontainers.image.ref.name": imageName(r),
          "io.containerd.image.name": `docker.io/library/${imageName(r)}`,
        },
      },
    ],
  };
  const blobs = [...images.flatMap((i) => i.blobs), index];
  return tar(
    [
      { type: "file", path: "oci-layout", mode: 0o644, data: json({ imageLayoutVersion: "1.0.0" }) },
      { type: "file", path: "index.json", mode: 0o644, data: json(top) },
      { type: "dir", path: "blobs", mode: 0o755 },
      { type: "dir", path: "blobs/sha256", mode: 0o755 },
      ...blobs.map(
        (b): TarEntry => ({
          type: "file",
          path: `blobs/sha256/${b.digest.slice("sha256:".length)}`,
          mode: 0o644,
          data: b.data,
        }),
      ),
    ],
    r.epoch,
  );
}
