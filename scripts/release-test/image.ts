// The OCI image with podman and runc, in a private storage folder (nothing of the machine's own
// podman is touched): loaded from the archive, run as the release's compose.yaml sets it up (its
// volumes, env file, health check and stop grace period), as its non-root user on a fresh volume, a
// key by e-mail and a conversion, `podman healthcheck run`, a stop during a conversion that lets it
// finish, a second container on the same volume that still knows the key; the arm64 image
// inspected with skopeo and its root filesystem run under qemu-user.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import sharp from "sharp";
import { Client, type Keys, multipart } from "../../test/support/imgpress.ts";
import { checkImage } from "../smoke/photo.ts";
import { assert } from "../smoke/report.ts";
import { type Ctx, emptyFolder, freePort, ok, sh, until } from "./context.ts";

// What worked in these sandboxes (crun cannot run here; no bridge networking, so no port mapping).
const RUN_FLAGS = ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024", "--network", "host"];
const UID = "65532";

/** The service of the release's compose.yaml; the test runs the image as it sets it up. */
interface ComposeService {
  image: string;
  env_file: string;
  volumes: string[];
  healthcheck: { test: string[] };
  stop_grace_period: string;
}

/** `podman run` flags for what compose.yaml says: volumes, env file, health check, stop grace. */
function composeFlags(dir: string, svc: ComposeService): string[] {
  assert(svc.healthcheck.test[0] === "CMD", `healthcheck ${JSON.stringify(svc.healthcheck.test)}`);
  const grace = /^(\d+)s$/.exec(svc.stop_grace_period);
  assert(grace, `stop_grace_period ${svc.stop_grace_period}`);
  return [
    ...svc.volumes.flatMap((v) => ["-v", v]),
    "--env-file",
    join(dir, svc.env_file),
    // podman reads HEALTHCHECK only from Docker-format images: compose's own, as podman compose passes it.
    "--health-cmd",
    JSON.stringify(svc.healthcheck.test.slice(1)),
    "--stop-timeout",
    grace[1]!,
  ];
}

export async function imageStage(ctx: Ctx): Promise<void> {
  const tag = "image";
  const oci = join(ctx.dir, `imgpress-${ctx.version}-oci.tar`);
  const store = emptyFolder(ctx, "podman");
  // podman refuses a run folder path over 50 characters.
  const runroot = mkdtempSync("/tmp/imgpress-podman-");
  const podmanBase = [
    "podman",
    "--root",
    join(store, "root"),
    "--runroot",
    runroot,
    "--runtime",
    "runc",
    "--cgroup-manager",
    "cgroupfs",
    "--events-backend",
    "file",
  ];
  const podman = (args: string[], timeoutMs = 120_000) => ok([...podmanBase, ...args], { timeoutMs });
  const name = `imgpress:${ctx.version}`;
  try {
    const loaded = await ctx.report.check(
      tag,
      `podman load -i imgpress-${ctx.version}-oci.tar (the amd64 image of the index)`,
      async () => {
        const out = await podman(["load", "-i", oci]);
        assert(out.includes(name), `load said: ${out.trim()}`);
        const cfg = JSON.parse(await podman(["image", "inspect", name]))[0];
        assert(cfg.Architecture === "amd64", `architecture ${cfg.Architecture}`);
        assert(cfg.Config.User === `${UID}:${UID}`, `user ${cfg.Config.User}`);
        assert(
          cfg.Config.Labels["org.opencontainers.image.version"] === ctx.version,
          `version label ${cfg.Config.Labels["org.opencontainers.image.version"]}`,
        );
        assert(cfg.Config.ExposedPorts?.["8443/tcp"], "8443/tcp not exposed");
        return `${out.trim().split("\n").pop()}; user ${cfg.Config.User}, ${(cfg.Size / 1048576).toFixed(0)} MiB`;
      },
    );
    if (!loaded) return;
    const svc = (
      Bun.YAML.parse(readFileSync(join(ctx.dir, "compose.yaml"), "utf8")) as { services: { imgpress: ComposeService } }
    ).services.imgpress;
    assert(svc.image === name, `compose.yaml's image is ${svc.image}, not ${name}`);
    // The README's steps: the example copied to imgpress.env, then the reader's settings in it.
    const port = await freePort();
    const project = emptyFolder(ctx, "compose");
    const example = readFileSync(join(ctx.dir, "imgpress.env.example"), "utf8");
    writeFileSync(
      join(project, svc.env_file),
      `${example}IMGPRESS_SMTP_URL=${ctx.sink.url}\nIMGPRESS_HOST=127.0.0.1\nIMGPRESS_PORT=${port}\n`,
    );
    const flags = composeFlags(project, svc);
    const start = async (container: string) => {
      await podman(["run", "-d", "--name", container, ...RUN_FLAGS, ...flags, name]);
      const mount = JSON.parse(await podman(["volume", "inspect", "imgpress-data"]))[0].Mountpoint as string;
      const certFile = join(mount, "tls", "cert.pem");
      const ca = await until("the container's certificate and /health", 30_000, async () => {
        const pem = readFileSync(certFile, "utf8");
        const res = await new Client(`https://127.0.0.1:${port}`, pem, 2000).fetch("/health");
        return res.ok ? pem : undefined;
      });
      return { client: new Client(`https://127.0.0.1:${port}`, ca, 120_000), mount };
    };

    let keys: Keys | undefined;
    let client: Client | undefined;
    const first = await ctx.report.check(
      tag,
      "podman run as the image's user on a fresh volume: e-mailed code, key, JPEG → WebP",
      async () => {
        const started = await start("imgpress-1");
        const mount = started.mount;
        client = started.client;
        const top = (await podman(["top", "imgpress-1", "user", "args"])).trim().split("\n").slice(1).join("; ");
        assert(/^imgpress\s+\/usr\/bin\/imgpress serve/.test(top), `podman top: ${top}`);
        const owners = [mount, join(mount, "imgpress.db")].map((p) => String(statSync(p).uid));
        assert(
          owners.every((u) => u === UID),
          `volume files owned by ${owners.join(", ")}, not ${UID}`,
        );
        keys = await client.obtainKeys(ctx.sink, "image@example.com");
        const said = await checkImage(
          await client.convert(keys, "bearer", multipart({ format: "webp" }, ctx.photo.bytes, "photo.jpg")),
          "webp",
          ctx.photo.width,
          ctx.photo.height,
          ctx.photo.bytes.length,
        );
        return `${top}; ${said}`;
      },
    );
    if (!first) return;
    await ctx.report.check(tag, "podman healthcheck run → healthy (imgpress health inside)", async () => {
      const r = await sh([...podmanBase, "healthcheck", "run", "imgpress-1"]);
      assert(r.code === 0, `exit ${r.code}: ${r.out.slice(-500)}`);
      return "healthy";
    });
    await ctx.report.check(
      tag,
      "podman stop during a conversion: it finishes (200), exit 0 within compose's stop grace period",
      async () => {
        const big = await sharp({
          create: {
            width: 2400,
            height: 1800,
            channels: 3,
            background: "#808080",
            noise: { type: "gaussian", mean: 128, sigma: 40 },
          },
        })
          .jpeg({ quality: 90 })
          .toBuffer();
        const c = client!;
        const pending = c.convert(keys!, "bearer", multipart({ format: "avif" }, new Uint8Array(big), "big.jpg"));
        await until("the conversion to be running", 20_000, async () => {
          const text = await (await c.fetch("/internal/metrics")).text();
          return /^imgpress_conversions_in_progress [1-9]/m.test(text) ? true : undefined;
        });
        const t0 = performance.now();
        const stopped = podman(["stop", "imgpress-1"], 60_000);
        const said = await checkImage(await pending, "avif", 2400, 1800, big.length);
        await stopped;
        const took = (performance.now() - t0) / 1000;
        // The server's own word that the conversion was still running when SIGTERM came.
        const logs = (await sh([...podmanBase, "logs", "imgpress-1"])).out.split("\n");
        const received = logs
          .map((l) => (l.startsWith("{") ? JSON.parse(l) : {}))
          .find((l) => String(l.msg).startsWith("SIGTERM received"));
        assert(
          received && received.conversions + received.requests > 0,
          `no SIGTERM line with work in flight: ${JSON.stringify(received)}`,
        );
        const state = JSON.parse(await podman(["inspect", "imgpress-1"]))[0].State;
        assert(state.ExitCode === 0, `exit code ${state.ExitCode}`);
        assert(
          took < Number.parseInt(svc.stop_grace_period, 10),
          `stop took ${took.toFixed(1)} s, over compose's ${svc.stop_grace_period}`,
        );
        return `${received.msg}; ${said}; stopped in ${took.toFixed(1)} s, exit 0`;
      },
    );
    await ctx.report.check(tag, "a new container on the same volume: the key still converts", async () => {
      await podman(["rm", "imgpress-1"]);
      const second = await start("imgpress-2");
      const said = await checkImage(
        await second.client.convert(
          keys!,
          "signed",
          multipart({ format: "webp", max_width: "320" }, ctx.photo.bytes, "photo.jpg"),
        ),
        "webp",
        320,
        Math.round((ctx.photo.height * 320) / ctx.photo.width),
        ctx.photo.bytes.length,
      );
      await podman(["stop", "imgpress-2"], 60_000);
      return said;
    });
  } finally {
    await sh([...podmanBase, "rm", "-f", "--all"]);
    await sh([...podmanBase, "system", "reset", "--force"]);
    rmSync(runroot, { recursive: true, force: true });
  }
  await armStage(ctx, oci);
}

/** The arm64 image: its config as skopeo reads it, and its root filesystem under qemu-user. */
async function armStage(ctx: Ctx, oci: string): Promise<void> {
  const tag = "image arm64";
  await ctx.report.check(
    tag,
    "skopeo inspect --override-arch arm64: architecture, entrypoint, user, volumes, labels",
    async () => {
      const raw = JSON.parse(
        await ok(["skopeo", "inspect", "--override-arch", "arm64", "--config", `oci-archive:${oci}`]),
      );
      assert(raw.architecture === "arm64" && raw.os === "linux", `${raw.os}/${raw.architecture}`);
      const c = raw.config;
      assert(
        JSON.stringify(c.Entrypoint) === '["/usr/bin/imgpress"]' && JSON.stringify(c.Cmd) === '["serve"]',
        `entrypoint ${JSON.stringify(c.Entrypoint)} ${JSON.stringify(c.Cmd)}`,
      );
      assert(c.User === `${UID}:${UID}`, `user ${c.User}`);
      assert(
        JSON.stringify(Object.keys(c.Volumes).sort()) === '["/cache","/data"]',
        `volumes ${JSON.stringify(c.Volumes)}`,
      );
      assert(
        c.Labels["org.opencontainers.image.version"] === ctx.version &&
          c.Labels["org.opencontainers.image.licenses"] === "MIT",
        JSON.stringify(c.Labels),
      );
      return `linux/arm64, ${JSON.stringify(c.Entrypoint)} ${JSON.stringify(c.Cmd)}, user ${c.User}`;
    },
  );
  await ctx.report.check(
    tag,
    "its root filesystem runs the executable's database and image libraries (qemu-aarch64-static -L)",
    async () => {
      const dir = emptyFolder(ctx, "arm64-image");
      await ok(["skopeo", "copy", "--override-arch", "arm64", `oci-archive:${oci}`, `dir:${join(dir, "image")}`]);
      const manifest = JSON.parse(readFileSync(join(dir, "image", "manifest.json"), "utf8"));
      const rootfs = join(dir, "rootfs");
      mkdirSync(rootfs);
      for (const layer of manifest.layers)
        await ok(["tar", "xzf", join(dir, "image", layer.digest.replace("sha256:", "")), "-C", rootfs]);
      // `migrate` loads libSQL and sharp (libvips, libstdc++) from the image's own /lib only: qemu
      // looks in the prefix first, and this x86-64 host has no arm64 libraries of its own in /lib.
      const env = {
        PATH: "/usr/bin:/bin",
        IMGPRESS_DATA_DIR: join(dir, "data"),
        IMGPRESS_CACHE_DIR: join(dir, "cache"),
      };
      const r = await ok(["qemu-aarch64-static", "-L", rootfs, join(rootfs, "usr/bin/imgpress"), "migrate"], {
        env,
        timeoutMs: 180_000,
      });
      const libs = readdirSync(join(rootfs, "lib", "aarch64-linux-gnu")).sort();
      return `${r.trim().split("\n").pop()}; /lib/aarch64-linux-gnu: ${libs.join(" ")}`;
    },
  );
}
