/**
 * A private Caddy for tests: Debian's caddy in the foreground on a fresh temp folder, running a
 * Caddyfile (e.g. deploy/proxy/Caddyfile) under a global options block that keeps it to itself:
 * no admin endpoint (port 2019 is shared by the machine), no automatic HTTPS (no port 80, no ACME),
 * its storage in the folder. As root it runs as `nobody`, as test/support/nginx.ts does.
 *
 *   const proxy = await startCaddy((dir) => caddyfileUsing(join(dir, "cert.pem")), port);
 *   await proxy.stop();
 */
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { nobody } from "./nginx.ts";

/** A running Caddy. */
export interface Caddy {
  readonly dir: string;
  /** What it wrote so far (its JSON log). */
  log(): string;
  /** SIGTERM, SIGKILL after 10 s; removes the folder. */
  stop(): Promise<void>;
}

/** Debian's caddy (`scripts/ci-setup.sh` installs it). */
export function caddyBinary(): string {
  for (const candidate of ["/usr/bin/caddy", "/usr/sbin/caddy"]) if (existsSync(candidate)) return candidate;
  throw new Error("caddy not found in /usr/bin: run `sh scripts/ci-setup.sh` (as root) to install Debian's caddy");
}

/**
 * Lets `setup` write its files into a fresh folder and return a Caddyfile (absolute paths), then
 * starts Caddy on it; resolves once `port` accepts connections.
 */
export async function startCaddy(setup: (dir: string) => string | Promise<string>, port: number): Promise<Caddy> {
  const dir = mkdtempSync(join(tmpdir(), "imgpress-caddy-"));
  const owner = process.getuid?.() === 0 ? nobody() : undefined;
  const site = await setup(dir);
  const globals = `{\n\tadmin off\n\tauto_https off\n\tstorage file_system ${join(dir, "data")}\n\tdefault_sni 127.0.0.1\n}\n\n`;
  writeFileSync(join(dir, "Caddyfile"), globals + site);
  if (owner) for (const name of ["", ...readdirSync(dir)]) chownSync(join(dir, name), owner.uid, owner.gid);
  const home = {
    HOME: dir,
    XDG_DATA_HOME: join(dir, "data"),
    XDG_CONFIG_HOME: join(dir, "config"),
    PATH: process.env.PATH ?? "/usr/bin:/bin",
  };
  const proc = Bun.spawn([caddyBinary(), "run", "--config", join(dir, "Caddyfile"), "--adapter", "caddyfile"], {
    cwd: dir,
    env: home,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    ...(owner ?? {}),
  });
  let output = "";
  for (const stream of [proc.stdout, proc.stderr])
    void (async () => {
      for await (const chunk of stream) output += new TextDecoder().decode(chunk);
    })();
  const kill = () => proc.kill("SIGKILL");
  process.on("exit", kill);
  const started = Date.now();
  while (!(await accepts(port))) {
    if (proc.exitCode !== null || Date.now() - started > 10_000) {
      proc.kill("SIGKILL");
      await proc.exited;
      process.off("exit", kill);
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`caddy did not start (exit ${proc.exitCode ?? "none, killed after 10 s"}): ${output.trim()}`);
    }
    await Bun.sleep(50);
  }
  return {
    dir,
    log: () => output,
    async stop() {
      proc.kill("SIGTERM");
      const timer = setTimeout(() => proc.kill("SIGKILL"), 10_000);
      await proc.exited;
      clearTimeout(timer);
      process.off("exit", kill);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on("error", () => resolve(false));
  });
}
