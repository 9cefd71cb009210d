/**
 * A private nginx for tests: Debian's nginx in the foreground on a fresh temp prefix, running an
 * http-level site config (e.g. docs/scaling/nginx.conf) inside a minimal main config whose temp
 * folders, pid file and logs all live in the prefix. No system service is touched; as root it runs
 * as `nobody`, never with root workers. The access log names the upstream(s) each request went to.
 *
 *   const lb = await startNginx((dir) => siteConfigUsing(join(dir, "cert.pem")));  // sockets bound
 *   await lb.requests();   // [{ upstreams: ["127.0.0.1:8081"], status: 200, method: "GET", uri: "/health" }, …]
 *   await lb.stop();
 */
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** One line of the access log. */
export interface NginxRequest {
  /** Every upstream tried, in order (`$upstream_addr`); empty when none was. */
  upstreams: string[];
  status: number;
  method: string;
  uri: string;
}

/** A running nginx. */
export interface Nginx {
  /** The prefix folder (config, certificates, temp folders, logs). */
  readonly dir: string;
  /** Pid of the master process (leader of its own process group). */
  readonly pid: number;
  /**
   * The access log, holding every request whose answer a client has received: nginx writes a
   * request's line just after sending its answer, so a line can still be missing when the client
   * reads the answer (measured: 5 in 2,000). One worker handles events in order, so once it has
   * answered a mark request, the lines of everything answered before are written. Not for a
   * request whose body nginx discards (its own 413): that line waits for the rest of the body.
   */
  requests(): Promise<NginxRequest[]>;
  /** The error log so far. */
  errorLog(): string;
  /** Graceful stop (SIGQUIT), SIGKILL of the whole group after 10 s; removes the prefix folder. */
  stop(): Promise<void>;
}

/** Debian's nginx (`scripts/ci-setup.sh` installs it). */
export function nginxBinary(): string {
  for (const candidate of ["/usr/sbin/nginx", "/usr/bin/nginx"]) if (existsSync(candidate)) return candidate;
  throw new Error(
    "nginx not found in /usr/sbin or /usr/bin: run `sh scripts/ci-setup.sh` (as root) to install Debian's nginx",
  );
}

/**
 * Creates a prefix folder, lets `setup` write its files there and return the site config (absolute
 * paths), then starts nginx on it; resolves once its listening sockets are bound.
 */
export async function startNginx(setup: (dir: string) => string | Promise<string>): Promise<Nginx> {
  const dir = mkdtempSync(join(tmpdir(), "imgpress-nginx-"));
  const owner = process.getuid?.() === 0 ? nobody() : undefined;
  try {
    writeFileSync(join(dir, "site.conf"), await setup(dir));
    writeFileSync(join(dir, "nginx.conf"), mainConfig(dir));
    if (owner) for (const name of ["", ...readdirSync(dir)]) chownSync(join(dir, name), owner.uid, owner.gid);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const pidFile = join(dir, "nginx.pid");
  const globals = `daemon off; pid ${pidFile}; error_log ${join(dir, "error.log")} warn;`;
  // Its own process group, so that a stuck master and its worker can be killed together.
  const proc = Bun.spawn([nginxBinary(), "-p", `${dir}/`, "-c", join(dir, "nginx.conf"), "-g", globals], {
    cwd: dir,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
    detached: true,
    ...(owner ?? {}),
  });
  const stderr = new Response(proc.stderr).text();
  const killGroup = () => {
    try {
      process.kill(-proc.pid, "SIGKILL");
    } catch {
      // already gone
    }
  };
  process.on("exit", killGroup);

  const started = Date.now();
  while (!existsSync(pidFile)) {
    if (proc.exitCode !== null || Date.now() - started > 10_000) {
      killGroup();
      await proc.exited;
      process.off("exit", killGroup);
      const log = existsSync(join(dir, "error.log")) ? readFileSync(join(dir, "error.log"), "utf8") : "";
      rmSync(dir, { recursive: true, force: true });
      throw new Error(
        `nginx did not start (exit ${proc.exitCode ?? "none, killed after 10 s"}): ${(await stderr).trim()}\n${log.trim()}`,
      );
    }
    await Bun.sleep(20);
  }

  return {
    dir,
    pid: proc.pid,
    async requests() {
      const mark = await fetch(`http://localhost${MARK_URI}`, { unix: join(dir, MARK_SOCKET) } as RequestInit);
      if (mark.status !== 204) throw new Error(`nginx answered its log mark with ${mark.status}`);
      return readLines(join(dir, "access.log"))
        .map(parseAccessLine)
        .filter((r) => r.uri !== MARK_URI);
    },
    errorLog: () => readLines(join(dir, "error.log")).join("\n"),
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGQUIT");
      const timer = setTimeout(killGroup, 10_000);
      await proc.exited;
      clearTimeout(timer);
      process.off("exit", killGroup);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The mark server of `requests()`: a Unix socket in the prefix, answered by nginx itself. */
const MARK_SOCKET = "mark.sock";
const MARK_URI = "/.imgpress-test-log-mark";

/** One worker, so round-robin over the upstreams is exact and the log is in order; every path inside the prefix. */
function mainConfig(dir: string): string {
  const temp = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"]
    .map((t) => `    ${t}_temp_path ${join(dir, t)};`)
    .join("\n");
  return `worker_processes 1;
events {
    worker_connections 512;
}
http {
${temp}
    log_format upstreams '$upstream_addr|$status|$request_method|$uri';
    access_log ${join(dir, "access.log")} upstreams;
    include ${join(dir, "site.conf")};
    server {
        listen unix:${join(dir, MARK_SOCKET)};
        location = ${MARK_URI} { return 204; }
    }
}
`;
}

function parseAccessLine(line: string): NginxRequest {
  const [upstreams = "-", status = "0", method = "", uri = ""] = line.split("|");
  // Several upstreams tried for one request read "a, b" (" : " between internal redirects).
  return { upstreams: upstreams === "-" ? [] : upstreams.split(/\s*[,:]\s+/), status: Number(status), method, uri };
}

function readLines(file: string): string[] {
  return existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean) : [];
}

/** The `nobody` user and group, which a server started by a root test runs as. */
export function nobody(): { uid: number; gid: number } {
  const id = (flag: string) => {
    const r = Bun.spawnSync(["id", flag, "nobody"], { stdout: "pipe", stderr: "ignore" });
    return r.exitCode === 0 ? Number(r.stdout.toString().trim()) : NaN;
  };
  const uid = id("-u");
  const gid = id("-g");
  if (!Number.isInteger(uid) || !Number.isInteger(gid))
    throw new Error("running as root, but there is no `nobody` user to run nginx as");
  return { uid, gid };
}
