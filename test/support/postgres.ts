/**
 * A real, private PostgreSQL cluster for tests: initdb into a fresh temp folder, `pg_ctl start` on
 * 127.0.0.1 and a free port, superuser `imgpress` with a random password (scram-sha-256, so URLs
 * with user:password are really checked). One cluster per process (bun test runs every file in one
 * process), each caller gets its own database; stopped and removed when the process exits.
 *
 *   import { createDatabase, startPostgres } from "./support/postgres.ts";
 *   const pg = await startPostgres();                 // { port, adminUrl, stop(), start(), restart() }
 *   const url = await createDatabase("keys");         // postgres://imgpress:…@127.0.0.1:PORT/keys_…
 *   await pg.stop(); … expect 503 …; await pg.start();  // same data folder and port
 *   console.log(await psql(url, "SELECT 1"));         // "1"
 *
 * Needs the server binaries (`sh scripts/ci-setup.sh` installs Debian's postgresql). As root (CI),
 * initdb and pg_ctl run as the `postgres` system user, since PostgreSQL refuses to run as root.
 */
import { randomBytes } from "node:crypto";
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { closedPort } from "./ports.ts";

/** The superuser every URL of the cluster logs in as. */
export const PG_USER = "imgpress";

/** The running cluster of this process. */
export interface PostgresCluster {
  /** TCP port on 127.0.0.1 (kept across stop/start). */
  port: number;
  /** Superuser password (random per process). */
  password: string;
  /** `postgres://imgpress:PASSWORD@127.0.0.1:PORT/postgres`, the maintenance database. */
  adminUrl: string;
  /** Stops the server (fast shutdown: open connections are cut); the data folder stays. No-op when stopped. */
  stop(): Promise<void>;
  /** Starts the server again on the same data folder and port; resolves when it accepts connections. */
  start(): Promise<void>;
  /** stop() then start(). */
  restart(): Promise<void>;
  /**
   * Freezes the server (SIGSTOP to the postmaster and every backend): connections stay open but
   * nothing answers, as with a hung host or a cut network. `thaw` resumes it; always thaw in a finally.
   */
  freeze(): void;
  thaw(): void;
}

interface Cluster {
  bindir: string;
  base: string;
  data: string;
  sockets: string;
  logFile: string;
  port: number;
  password: string;
  /** The `postgres` system user when this process is root, else undefined (run as ourselves). */
  runAs: { uid: number; gid: number } | undefined;
  running: boolean;
}

let started: Promise<PostgresCluster> | undefined;
let current: Cluster | undefined;
let databases = 0;

/** Starts this process's cluster (once; later calls return the same one). */
export function startPostgres(): Promise<PostgresCluster> {
  started ??= boot();
  return started;
}

/** Creates a fresh empty database named `<prefix>_<n>_<random>` and returns its URL (starts the cluster if needed). */
export async function createDatabase(prefix = "test"): Promise<string> {
  if (!/^[a-z][a-z0-9_]{0,39}$/.test(prefix))
    throw new Error(`createDatabase: prefix must match [a-z][a-z0-9_]{0,39}, not "${prefix}"`);
  const pg = await startPostgres();
  const name = `${prefix}_${++databases}_${randomBytes(4).toString("hex")}`;
  await psql(pg.adminUrl, `CREATE DATABASE "${name}"`);
  return databaseUrl(pg.port, pg.password, name);
}

/** Runs `sql` with the cluster's psql against `url` (password passed in the child's env only); resolves to stdout, trimmed, unaligned, no headers. */
export async function psql(url: string, sql: string): Promise<string> {
  const u = new URL(url);
  const env = withoutPgEnv();
  env.PGPASSWORD = decodeURIComponent(u.password);
  env.PGCONNECT_TIMEOUT = "5";
  const args = [
    "-X",
    "-q",
    "-A",
    "-t",
    "-v",
    "ON_ERROR_STOP=1",
    "-h",
    u.hostname,
    "-p",
    u.port || "5432",
    "-U",
    decodeURIComponent(u.username),
    "-d",
    decodeURIComponent(u.pathname.slice(1)),
    "-c",
    sql,
  ];
  const result = await run([join(serverBindir(), "psql"), ...args], { env });
  if (result.code !== 0)
    throw new Error(`psql failed (exit ${result.code}): ${result.stderr.trim() || result.stdout.trim()}`);
  return result.stdout.trim();
}

/** Stops and removes this process's cluster now (also done after the whole run by test/support/teardown.ts, and on SIGINT/SIGTERM); a later startPostgres() makes a new one. */
export async function stopPostgres(): Promise<void> {
  const pending = started;
  started = undefined;
  if (pending) await pending.catch(() => undefined);
  destroy();
}

/** The folder with initdb, pg_ctl, postgres and psql: `pg_config --bindir`, else the highest /usr/lib/postgresql/N/bin. */
export function serverBindir(): string {
  const hasServer = (dir: string) => ["initdb", "pg_ctl", "postgres", "psql"].every((b) => existsSync(join(dir, b)));
  try {
    const out = Bun.spawnSync(["pg_config", "--bindir"], { stdout: "pipe", stderr: "ignore" });
    const dir = out.exitCode === 0 ? out.stdout.toString().trim() : "";
    if (dir && hasServer(dir)) return dir;
  } catch {
    // No pg_config on PATH: fall through to Debian's layout.
  }
  const root = "/usr/lib/postgresql";
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => /^\d+(\.\d+)?$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  for (const v of versions) if (hasServer(join(root, v, "bin"))) return join(root, v, "bin");
  throw new Error(
    "PostgreSQL server binaries (initdb, pg_ctl, postgres, psql) not found via `pg_config --bindir` nor in /usr/lib/postgresql/*/bin: " +
      "run `sh scripts/ci-setup.sh` (as root) to install Debian's postgresql package",
  );
}

async function boot(): Promise<PostgresCluster> {
  const bindir = serverBindir();
  const runAs = process.getuid?.() === 0 ? postgresUser() : undefined;
  const base = mkdtempSync(join(tmpdir(), "imgpress-pg-"));
  const c: Cluster = {
    bindir,
    base,
    data: join(base, "data"),
    sockets: join(base, "sock"),
    logFile: join(base, "server.log"),
    port: 0,
    password: randomBytes(18).toString("hex"),
    runAs,
    running: false,
  };
  current = c;
  registerExitHandlers();
  try {
    mkdirSync(c.sockets, { mode: 0o700 });
    const pwfile = join(base, "pwfile");
    writeFileSync(pwfile, `${c.password}\n`, { mode: 0o600 });
    if (runAs) for (const p of [base, c.sockets, pwfile]) chownSync(p, runAs.uid, runAs.gid);
    chmodSync(base, 0o700);
    const init = await runCluster(c, [
      join(bindir, "initdb"),
      "-D",
      c.data,
      "-U",
      PG_USER,
      `--pwfile=${pwfile}`,
      "--auth=scram-sha-256",
      "--encoding=UTF8",
      "--locale=C",
      "--no-sync",
      "--no-instructions",
    ]);
    rmSync(pwfile, { force: true });
    if (init.code !== 0)
      throw new Error(`initdb failed (exit ${init.code}): ${init.stderr.trim() || init.stdout.trim()}`);
    // Another test run on the machine may pick the same port: try a few.
    for (let attempt = 1; ; attempt++) {
      c.port = await closedPort();
      try {
        await startServer(c);
        break;
      } catch (err) {
        if (attempt >= 3) throw err;
      }
    }
  } catch (err) {
    destroy();
    throw err;
  }
  return {
    port: c.port,
    password: c.password,
    adminUrl: databaseUrl(c.port, c.password, "postgres"),
    stop: () => stopServer(c),
    start: () => startServer(c),
    restart: async () => {
      await stopServer(c);
      await startServer(c);
    },
    freeze: () => signalServer(c, "SIGSTOP"),
    thaw: () => signalServer(c, "SIGCONT"),
  };
}

/** Sends `signal` to the postmaster and all its children (read from /proc). */
function signalServer(c: Cluster, signal: "SIGSTOP" | "SIGCONT"): void {
  const postmaster = Number(readFileSync(join(c.data, "postmaster.pid"), "utf8").split("\n")[0]);
  const children = readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .filter((d) => {
      try {
        // Field 4 of /proc/PID/stat is the parent pid; the name field (2) may hold spaces, so split after its ")".
        return Number(readFileSync(`/proc/${d}/stat`, "utf8").split(") ")[1]!.split(" ")[1]) === postmaster;
      } catch {
        return false;
      }
    })
    .map(Number);
  for (const pid of signal === "SIGSTOP" ? [postmaster, ...children] : [...children, postmaster]) {
    try {
      process.kill(pid, signal);
    } catch {
      // A backend that ended meanwhile.
    }
  }
}

async function startServer(c: Cluster): Promise<void> {
  if (c.running) return;
  const options = `-p ${c.port} -k ${c.sockets} -c listen_addresses=127.0.0.1 -c fsync=off`;
  const r = await runCluster(c, [
    join(c.bindir, "pg_ctl"),
    "start",
    "-w",
    "-t",
    "60",
    "-D",
    c.data,
    "-l",
    c.logFile,
    "-o",
    options,
  ]);
  if (r.code !== 0)
    throw new Error(
      `pg_ctl start failed (exit ${r.code}) on port ${c.port}: ${r.stderr.trim() || r.stdout.trim()}\nserver log:\n${logTail(c)}`,
    );
  c.running = true;
}

async function stopServer(c: Cluster): Promise<void> {
  if (!c.running) return;
  const r = await runCluster(c, [join(c.bindir, "pg_ctl"), "stop", "-w", "-t", "60", "-m", "fast", "-D", c.data]);
  if (r.code !== 0) throw new Error(`pg_ctl stop failed (exit ${r.code}): ${r.stderr.trim() || r.stdout.trim()}`);
  c.running = false;
}

/** Synchronous on purpose: it also runs from the process's exit handler, where nothing async completes. */
function destroy(): void {
  const c = current;
  current = undefined;
  if (!c) return;
  if (existsSync(join(c.data, "postmaster.pid"))) {
    Bun.spawnSync(
      asClusterUser(c, [join(c.bindir, "pg_ctl"), "stop", "-w", "-t", "30", "-m", "immediate", "-D", c.data]),
      { cwd: c.base, env: withoutPgEnv(), stdout: "ignore", stderr: "ignore" },
    );
  }
  rmSync(c.base, { recursive: true, force: true });
}

let handlersRegistered = false;

function registerExitHandlers(): void {
  if (handlersRegistered) return;
  handlersRegistered = true;
  process.on("exit", destroy);
  // pg_ctl detaches the server (its own session), so an interrupted run would leave it behind.
  for (const [signal, code] of [
    ["SIGINT", 130],
    ["SIGTERM", 143],
    ["SIGHUP", 129],
  ] as const) {
    process.once(signal, () => {
      destroy();
      process.exit(code);
    });
  }
}

/** Runs a server program as the cluster's owner, in the cluster folder (root's cwd may be unreadable to `postgres`). */
function runCluster(c: Cluster, argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return run(asClusterUser(c, argv), { cwd: c.base, env: withoutPgEnv() });
}

function asClusterUser(c: Cluster, argv: string[]): string[] {
  if (!c.runAs) return argv;
  const runuser = ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"].find((p) => existsSync(p));
  if (runuser) return [runuser, "-u", "postgres", "--", ...argv];
  return ["su", "postgres", "-s", "/bin/sh", "-c", argv.map(shellQuote).join(" ")];
}

function postgresUser(): { uid: number; gid: number } {
  const id = (flag: string) => {
    const r = Bun.spawnSync(["id", flag, "postgres"], { stdout: "pipe", stderr: "ignore" });
    return r.exitCode === 0 ? Number(r.stdout.toString().trim()) : NaN;
  };
  const uid = id("-u");
  const gid = id("-g");
  if (!Number.isInteger(uid) || !Number.isInteger(gid)) {
    throw new Error(
      "running as root, but there is no `postgres` system user to run the cluster as (PostgreSQL refuses root): run `sh scripts/ci-setup.sh`",
    );
  }
  return { uid, gid };
}

async function run(
  argv: string[],
  options: { cwd?: string; env: Record<string, string> },
): Promise<{ code: number; stdout: string; stderr: string }> {
  const sub = Bun.spawn(argv, { cwd: options.cwd, env: options.env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [stdout, stderr, code] = await Promise.all([
    new Response(sub.stdout).text(),
    new Response(sub.stderr).text(),
    sub.exited,
  ]);
  return { code, stdout, stderr };
}

/** The environment minus PG* variables, so a developer's PGHOST/PGSSLMODE/PGPASSWORD cannot redirect the fixture. */
function withoutPgEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("PG")) env[k] = v;
  return env;
}

function databaseUrl(port: number, password: string, database: string): string {
  return `postgres://${PG_USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
}

function logTail(c: Cluster): string {
  try {
    return readFileSync(c.logFile, "utf8").split("\n").slice(-20).join("\n");
  } catch {
    return "(no server log)";
  }
}

function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}
