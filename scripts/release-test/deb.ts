// The .deb on this machine: installed with dpkg -i, the service started as its unit starts it (PID 1
// here is not systemd: the unit's ExecStart as the unit's User, in its WorkingDirectory, with its
// Environment= and EnvironmentFile=), a conversion through it, the unit checked by systemd-analyze,
// then dpkg -r (data kept) and dpkg -P (data gone); lintian on both packages.
import { appendFileSync, existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { multipart, type Service, startService } from "../../test/support/imgpress.ts";
import { checkImage } from "../smoke/photo.ts";
import { assert } from "../smoke/report.ts";
import { type Ctx, dpkgField, ok, sh } from "./context.ts";
import { readmeRecipe } from "./readme.ts";

const UNIT = "/lib/systemd/system/imgpress.service";
const ENV_FILE = "/etc/imgpress/imgpress.env";
const DATA = "/var/lib/imgpress";

/** The [Service] settings of a unit file that this test honours, each as written (last wins, lists add up). */
function unitService(text: string): {
  execStart: string;
  user: string;
  group: string;
  workdir: string;
  env: Record<string, string>;
  envFiles: string[];
} {
  const out = {
    execStart: "",
    user: "",
    group: "",
    workdir: "",
    env: {} as Record<string, string>,
    envFiles: [] as string[],
  };
  for (const line of text.split("\n")) {
    const m = /^(\w+)=(.*)$/.exec(line.trim());
    if (!m) continue;
    const [, key, value] = m as unknown as [string, string, string];
    if (key === "ExecStart") out.execStart = value;
    if (key === "User") out.user = value;
    if (key === "Group") out.group = value;
    if (key === "WorkingDirectory") out.workdir = value;
    if (key === "EnvironmentFile") out.envFiles.push(value);
    if (key === "Environment")
      for (const pair of value.split(/\s+/))
        out.env[pair.slice(0, pair.indexOf("="))] = pair.slice(pair.indexOf("=") + 1);
  }
  return out;
}

/** KEY=value lines of an environment file, as systemd reads them (comments and blank lines skipped). */
function envFile(path: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of readFileSync(path, "utf8").split("\n")) {
    const m = /^\s*([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (m && !line.trim().startsWith("#")) out[m[1]!] = m[2]!.trim();
  }
  return out;
}

/** dpkg, retried while another apt or dpkg holds the lock (a shared machine). */
async function dpkg(args: string[]): Promise<string> {
  for (let i = 0; ; i++) {
    const r = await sh(["dpkg", ...args], {
      env: { ...(process.env as Record<string, string>), DEBIAN_FRONTEND: "noninteractive" },
    });
    if (r.code === 0) return r.out;
    if (i < 30 && /lock/i.test(r.out)) {
      await Bun.sleep(2000);
      continue;
    }
    throw new Error(`dpkg ${args.join(" ")}: exit ${r.code}: ${r.out.slice(-1500)}`);
  }
}

export async function debStage(ctx: Ctx): Promise<void> {
  const tag = "deb";
  const deb = join(ctx.dir, `imgpress_${ctx.version}_amd64.deb`);
  for (const arch of ["amd64", "arm64"]) {
    await ctx.report.check(tag, `lintian imgpress_${ctx.version}_${arch}.deb: no errors, no warnings`, async () => {
      const r = await sh(
        ["lintian", "--fail-on", "error,warning", join(ctx.dir, `imgpress_${ctx.version}_${arch}.deb`)],
        { timeoutMs: 180_000 },
      );
      const said = r.stdout.split("\n").filter((l) => /^[EW]: /.test(l));
      assert(r.code === 0 && said.length === 0, `exit ${r.code}:\n${r.out.slice(-1500)}`);
      return "clean (overrides: unstripped executable, Bun's non-PIE/RELRO build, embedded libvips/libSQL)";
    });
  }
  const already = await sh(["dpkg-query", "-W", dpkgField("Status"), "imgpress"]);
  if (already.code === 0 && !already.stdout.includes("not-installed")) {
    ctx.report.fail(
      tag,
      `imgpress is already installed on this machine (${already.stdout.trim()}): this test installs and purges its own; dpkg -P imgpress first`,
    );
    return;
  }
  try {
    await installAndRun(ctx, tag, deb);
  } finally {
    // Never leave the package behind, whatever failed.
    const left = await sh(["dpkg-query", "-W", dpkgField("Status"), "imgpress"]);
    if (left.code === 0 && !left.stdout.includes("not-installed")) await dpkg(["-P", "imgpress"]);
  }
}

async function installAndRun(ctx: Ctx, tag: string, deb: string): Promise<void> {
  const installed = await ctx.report.check(
    tag,
    `dpkg -i imgpress_${ctx.version}_amd64.deb: user, 0700 data folder, conffile 0640 root:imgpress`,
    async () => {
      await dpkg(["-i", deb]);
      const version = (await ok(["dpkg-query", "-W", dpkgField("Version"), "imgpress"])).trim();
      assert(version === ctx.version, `dpkg says version ${version}`);
      const passwd = (await ok(["getent", "passwd", "imgpress"])).trim();
      assert(passwd.split(":")[5] === DATA, `imgpress's home: ${passwd}`);
      const st = statSync(DATA);
      assert((st.mode & 0o777) === 0o700, `${DATA} has mode ${(st.mode & 0o777).toString(8)}`);
      const stat = (await ok(["stat", "-c", "%a %U %G", ENV_FILE])).trim();
      assert(stat === "640 root imgpress", `${ENV_FILE}: ${stat}`);
      const conffiles = (await ok(["dpkg-query", "-W", dpkgField("Conffiles"), "imgpress"])).trim();
      assert(conffiles.startsWith(ENV_FILE), `conffiles: ${conffiles}`);
      assert(
        (await ok(["/usr/bin/imgpress", "--version"])).startsWith(`imgpress ${ctx.version}+`),
        "/usr/bin/imgpress --version",
      );
      return `${passwd}; ${DATA} 0700; ${ENV_FILE} ${stat}`;
    },
  );
  if (!installed) return;
  await ctx.report.check(tag, `systemd-analyze verify ${UNIT}`, async () => {
    const r = await sh(["systemd-analyze", "verify", UNIT]);
    // Only complaints about this unit count: the machine's other units are not ours.
    const ours = r.out.split("\n").filter((l) => /imgpress/.test(l));
    assert(r.code === 0 && ours.length === 0, `exit ${r.code}: ${r.out.slice(-1000)}`);
    return "no complaint about imgpress.service";
  });
  const unit = unitService(readFileSync(UNIT, "utf8"));
  let svc: Service | undefined;
  await ctx.report.check(
    tag,
    "the unit's ExecStart as User=imgpress with its environment: e-mailed code, key, JPEG → AVIF",
    async () => {
      assert(
        unit.execStart === "/usr/bin/imgpress serve" && unit.user === "imgpress",
        `ExecStart=${unit.execStart} User=${unit.user}`,
      );
      assert(unit.envFiles.join() === `-${ENV_FILE}`, `EnvironmentFile=${unit.envFiles.join()}`);
      // What an administrator writes in the settings file (and the free port a shared machine needs).
      appendFileSync(
        ENV_FILE,
        `\nIMGPRESS_SMTP_URL=${ctx.sink.url}\nIMGPRESS_MAIL_FROM=imgpress@example.com\nIMGPRESS_HOST=127.0.0.1\nIMGPRESS_PORT=0\n`,
      );
      // systemd's CacheDirectory= would make it; postinst did already.
      assert(existsSync("/var/cache/imgpress"), "no /var/cache/imgpress");
      const env = {
        PATH: "/usr/sbin:/usr/bin:/sbin:/bin",
        LANG: "C.UTF-8",
        HOME: DATA,
        ...unit.env,
        ...envFile(ENV_FILE),
      };
      const runner = ["setpriv", `--reuid=${unit.user}`, `--regid=${unit.group}`, "--init-groups", "--"];
      svc = await startService({
        launch: { runtime: "binary", file: "/usr/bin/imgpress", runner },
        dataDir: false,
        cwd: unit.workdir,
        baseEnv: env,
        env: {},
      });
      assert(svc.dataDir === DATA, `data folder ${svc.dataDir}`);
      const keys = await svc.client.obtainKeys(ctx.sink, "deb@example.com");
      const res = await svc.client.convert(
        keys,
        "signed",
        multipart({ format: "avif", max_width: "640" }, ctx.photo.bytes, "photo.jpg"),
      );
      const said = await checkImage(
        res,
        "avif",
        640,
        Math.round((ctx.photo.height * 640) / ctx.photo.width),
        ctx.photo.bytes.length,
      );
      // The README's admin command as printed, with sudo -u as runuser (no sudo on a CI machine).
      const admin = readmeRecipe("On Debian").find((l) => l.startsWith("sudo -u imgpress "));
      assert(admin, "the README's .deb recipe has no `sudo -u imgpress …` admin command");
      const sudo = 'sudo() { if [ "$1" = -u ]; then u=$2; shift 2; runuser -u "$u" -- "$@"; else "$@"; fi; }';
      const listed = await ok(["bash", "-euo", "pipefail", "-c", `${sudo}\n${admin}`], {
        cwd: "/",
        env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", LANG: "C.UTF-8" },
      });
      assert(listed.includes("deb@example.com"), `${admin}\nprinted: ${listed.trim()}`);
      const owner = (await ok(["stat", "-c", "%U %a", join(DATA, "imgpress.db")])).trim();
      assert(owner.startsWith("imgpress "), `imgpress.db: ${owner}`);
      const code = await svc.stop();
      assert(code === 0, `exit ${code} after SIGTERM`);
      return `${said}; ${DATA}/imgpress.db ${owner}; the README's keys list as imgpress shows the key`;
    },
  );
  svc?.proc.kill("SIGKILL");
  await ctx.report.check(
    tag,
    "dpkg -i again (an upgrade's path): the edited settings, their 0640 and the data are kept",
    async () => {
      const before = readFileSync(ENV_FILE, "utf8");
      await dpkg(["-i", join(ctx.dir, `imgpress_${ctx.version}_amd64.deb`)]);
      assert(readFileSync(ENV_FILE, "utf8") === before, `${ENV_FILE} changed on reinstall`);
      const stat = (await ok(["stat", "-c", "%a %U %G", ENV_FILE])).trim();
      assert(stat === "640 root imgpress", `${ENV_FILE}: ${stat}`);
      assert(existsSync(join(DATA, "master.key")), `${DATA}/master.key gone`);
      return `${ENV_FILE} as edited, ${stat}; ${DATA} kept`;
    },
  );
  await ctx.report.check(
    tag,
    "dpkg -r keeps /var/lib/imgpress and the user; dpkg -P removes the data and the settings",
    async () => {
      await dpkg(["-r", "imgpress"]);
      assert(!existsSync("/usr/bin/imgpress"), "/usr/bin/imgpress still there after dpkg -r");
      assert(existsSync(join(DATA, "imgpress.db")) && existsSync(join(DATA, "master.key")), `dpkg -r removed ${DATA}`);
      assert(existsSync(ENV_FILE), `dpkg -r removed the conffile ${ENV_FILE}`);
      await dpkg(["-P", "imgpress"]);
      for (const gone of [DATA, "/var/cache/imgpress", "/etc/imgpress"])
        assert(!existsSync(gone), `${gone} still there after dpkg -P`);
      const override = await sh(["dpkg-statoverride", "--list", ENV_FILE]);
      assert(override.code !== 0, `statoverride left: ${override.out}`);
      return "remove: data, master key and settings kept; purge: all three gone (the system user stays, as Debian does)";
    },
  );
}
