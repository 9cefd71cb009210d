/**
 * A real, private WordPress for the plugin's end-to-end tests and bench: Debian's MariaDB started
 * from its binaries in a temp folder (socket only, no TCP), a copy of Debian's /usr/share/wordpress
 * with its own wp-config.php (Debian's reads /etc/wordpress), PHP's built-in server with a few
 * workers, and WordPress installed from PHP (`wp_install()`; Debian ships no wp-cli).
 *
 *   const wp = await startWordPress();                       // { url, root, uploads, php(), sql(), stop() }
 *   await wp.installPlugin("dist/imgpress-wordpress.zip");   // unzipped into wp-content/plugins, activated
 *   console.log(await wp.php("echo get_option('siteurl');"));
 *   await wp.stop();
 *
 * Needs `sh scripts/ci-setup.sh` (wordpress, mariadb-server, php-mysql, php-gd). As root, mariadbd
 * runs with --user=root, since the folder is ours.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { unusedPorts } from "./ports.ts";

/** Debian's WordPress (6.1 on bookworm). */
export const WORDPRESS_SOURCE = "/usr/share/wordpress";
/** The administrator every test signs in as. */
export const WP_ADMIN = { user: "admin", password: "imgpress-test-password", email: "owner@example.com" };

export interface WordPressOptions {
  /** Sets DISABLE_WP_CRON (the queue then runs only from wp-cron.php calls or the bulk page). */
  disableCron?: boolean;
  /** PHP_CLI_SERVER_WORKERS (default 4: the admin page, its REST calls and the cron spawn at once). */
  workers?: number;
}

export interface WordPress {
  /** e.g. `http://127.0.0.1:40123`. */
  url: string;
  /** The copy of WordPress (ABSPATH). */
  root: string;
  /** wp-content/uploads. */
  uploads: string;
  /** The PHP built-in server's requests, one line each ("… [200]: GET /wp-content/…"). */
  requests: string[];
  /** Runs PHP after wp-load.php (as a CLI request to this site); resolves to stdout; rejects on a non-zero exit. */
  php(code: string): Promise<string>;
  /** Runs SQL against the site's database (tab-separated, no headers). */
  sql(query: string): string;
  /** Unzips a plugin archive into wp-content/plugins and activates its main file. */
  installPlugin(zip: string, main?: string): Promise<void>;
  /** Lines of wp-content/debug.log (PHP notices, warnings and errors). */
  debugLog(): string[];
  stop(): Promise<void>;
}

/** Every site still running in this process, stopped by stopAllWordPress (test/support/teardown.ts) or at exit. */
const running = new Set<() => void>();
process.on("exit", () => stopAllWordPress());

/** Kills what startWordPress started and is still running (a failed test or script never leaves MariaDB or PHP behind). */
export function stopAllWordPress(): void {
  for (const kill of [...running]) kill();
}

/** Whether this machine has what startWordPress needs. */
export function hasWordPress(): boolean {
  return (
    existsSync(join(WORDPRESS_SOURCE, "wp-load.php")) &&
    existsSync("/usr/sbin/mariadbd") &&
    existsSync("/usr/bin/mariadb-install-db")
  );
}

function run(argv: string[], options: { input?: string; env?: NodeJS.ProcessEnv } = {}): string {
  const out = spawnSync(argv[0]!, argv.slice(1), {
    input: options.input,
    env: options.env ?? process.env,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  if (out.status !== 0)
    throw new Error(`${argv.slice(0, 3).join(" ")} exited ${out.status}: ${out.stderr || out.stdout}`);
  return out.stdout;
}

async function waitFor(what: string, check: () => boolean, timeoutMs: number, log?: () => string): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > until) throw new Error(`${what} did not come up in ${timeoutMs} ms${log ? `: ${log()}` : ""}`);
    await Bun.sleep(100);
  }
}

/** Starts MariaDB, copies and configures WordPress, serves it and installs it. */
export async function startWordPress(options: WordPressOptions = {}): Promise<WordPress> {
  const base = mkdtempSync(join(tmpdir(), "imgpress-wp-"));
  const socket = join(base, "mysql.sock");
  const root = join(base, "wp");
  const children: ChildProcess[] = [];
  // Each child leads its own process group: PHP's server forks its workers, which must go with it.
  const signal = (child: ChildProcess, sig: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, sig);
    } catch {
      // Already gone.
    }
  };
  const cleanup = () => {
    running.delete(cleanup);
    for (const child of children) signal(child, "SIGKILL");
    rmSync(base, { recursive: true, force: true });
  };
  running.add(cleanup);
  try {
    run([
      "mariadb-install-db",
      `--datadir=${join(base, "db")}`,
      "--user=root",
      "--auth-root-authentication-method=normal",
      "--skip-test-db",
      "--skip-name-resolve",
    ]);
    const db = spawn(
      "/usr/sbin/mariadbd",
      [
        `--datadir=${join(base, "db")}`,
        `--socket=${socket}`,
        "--skip-networking",
        "--user=root",
        `--pid-file=${join(base, "mariadb.pid")}`,
        `--log-error=${join(base, "mariadb.log")}`,
        "--innodb-buffer-pool-size=32M",
        "--skip-log-bin",
      ],
      { stdio: "ignore", detached: true },
    );
    children.push(db);
    const ping = () =>
      spawnSync("mariadb", [`--socket=${socket}`, "-uroot", "-e", "SELECT 1"], { stdio: "ignore" }).status === 0;
    await waitFor("MariaDB", ping, 30_000, () =>
      existsSync(join(base, "mariadb.log")) ? readFileSync(join(base, "mariadb.log"), "utf8").slice(-500) : "",
    );
    run(["mariadb", `--socket=${socket}`, "-uroot", "-e", "CREATE DATABASE wordpress CHARACTER SET utf8mb4"]);

    run(["cp", "-a", WORDPRESS_SOURCE, root]);
    rmSync(join(root, ".htaccess"), { force: true });
    run(["mkdir", "-p", join(root, "wp-content/uploads"), join(root, "wp-content/mu-plugins")]);
    // This machine has no internet: no update checks against wordpress.org (each would log a warning).
    writeFileSync(
      join(root, "wp-content/mu-plugins/offline.php"),
      `<?php
remove_action('init', 'wp_schedule_update_checks');
foreach (array('wp_version_check', 'wp_update_plugins', 'wp_update_themes', 'wp_maybe_auto_update') as $hook) { remove_all_actions($hook); }
add_filter('pre_http_request', function ($pre, $args, $url) { $host = parse_url($url, PHP_URL_HOST); return in_array($host, array('127.0.0.1', 'localhost'), true) ? $pre : new WP_Error('offline', 'offline test site'); }, 10, 3);
`,
    );
    const [port] = await unusedPorts(1);
    const url = `http://127.0.0.1:${port}`;
    const salt = () => randomBytes(32).toString("hex");
    const salts = [
      "AUTH_KEY",
      "SECURE_AUTH_KEY",
      "LOGGED_IN_KEY",
      "NONCE_KEY",
      "AUTH_SALT",
      "SECURE_AUTH_SALT",
      "LOGGED_IN_SALT",
      "NONCE_SALT",
    ]
      .map((k) => `define('${k}', '${salt()}');`)
      .join("\n");
    writeFileSync(
      join(root, "wp-config.php"),
      `<?php
// Written by test/support/wordpress.ts: this copy's own configuration (Debian's reads /etc/wordpress).
define('DB_NAME', 'wordpress');
define('DB_USER', 'root');
define('DB_PASSWORD', '');
define('DB_HOST', 'localhost:${socket}');
define('DB_CHARSET', 'utf8mb4');
define('DB_COLLATE', '');
${salts}
$table_prefix = 'wp_';
define('WP_HOME', '${url}');
define('WP_SITEURL', '${url}');
define('WP_CONTENT_DIR', __DIR__ . '/wp-content');
define('WP_CONTENT_URL', '${url}/wp-content');
define('WP_DEBUG', true);
define('WP_DEBUG_DISPLAY', false);
define('WP_DEBUG_LOG', __DIR__ . '/wp-content/debug.log');
define('FS_METHOD', 'direct');
define('AUTOMATIC_UPDATER_DISABLED', true);
define('WP_AUTO_UPDATE_CORE', false);
// No internet here: WordPress may only reach this machine (the imgpress server, its own cron).
define('WP_HTTP_BLOCK_EXTERNAL', true);
define('DISABLE_WP_CRON', ${options.disableCron ? "true" : "false"});
if (!defined('ABSPATH')) define('ABSPATH', __DIR__ . '/');
require_once ABSPATH . 'wp-settings.php';
`,
    );
    const phpEnv = { ...process.env, HTTP_HOST: `127.0.0.1:${port}` };
    const php = async (code: string, prelude = "") => {
      const script = `<?php ${prelude} $_SERVER['HTTP_HOST'] = '127.0.0.1:${port}'; $_SERVER['REQUEST_URI'] = '/'; $_SERVER['SERVER_NAME'] = '127.0.0.1'; require '${root}/wp-load.php';\n${code}`;
      const file = join(base, `run-${randomBytes(4).toString("hex")}.php`);
      writeFileSync(file, script);
      try {
        // Asynchronous: a test's own servers (the SMTP sink) must go on answering while PHP runs.
        const child = Bun.spawn(["php", "-d", "display_errors=stderr", file], {
          env: phpEnv,
          stdout: "pipe",
          stderr: "pipe",
        });
        const [out, err, code] = await Promise.all([
          new Response(child.stdout).text(),
          new Response(child.stderr).text(),
          child.exited,
        ]);
        if (code !== 0) throw new Error(`php exited ${code}: ${err || out}`);
        return out;
      } finally {
        rmSync(file, { force: true });
      }
    };
    await php(
      `require_once ABSPATH . 'wp-admin/includes/upgrade.php';
      $r = wp_install('A test site', '${WP_ADMIN.user}', '${WP_ADMIN.email}', true, '', '${WP_ADMIN.password}');
      update_option('uploads_use_yearmonth_folders', 1);
      switch_theme('twentytwentyone');
      update_option('show_avatars', 0);
      echo $r['user_id'];`,
      "define('WP_INSTALLING', true);",
    );

    const requests: string[] = [];
    const server = spawn("php", ["-S", `127.0.0.1:${port}`, "-t", root], {
      cwd: root,
      env: { ...process.env, PHP_CLI_SERVER_WORKERS: String(options.workers ?? 4) },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    children.push(server);
    let pending = "";
    const take = (chunk: Buffer) => {
      pending += chunk.toString("utf8");
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) if (/\] \[\d{3}\]: /.test(line) || /: (GET|POST|HEAD) /.test(line)) requests.push(line);
    };
    server.stdout!.on("data", take);
    server.stderr!.on("data", take);
    await waitFor(
      "php -S",
      () => spawnSync("curl", ["-fsS", "-o", "/dev/null", `${url}/wp-login.php`]).status === 0,
      20_000,
    );

    return {
      url,
      root,
      uploads: join(root, "wp-content/uploads"),
      requests,
      php,
      sql: (query) => run(["mariadb", `--socket=${socket}`, "-uroot", "-N", "-B", "wordpress", "-e", query]),
      async installPlugin(zip, main = "imgpress/imgpress.php") {
        run(["unzip", "-q", "-o", zip, "-d", join(root, "wp-content/plugins")]);
        const out = await php(
          `require_once ABSPATH . 'wp-admin/includes/plugin.php'; $r = activate_plugin('${main}'); echo is_wp_error($r) ? $r->get_error_message() : 'ok';`,
        );
        if (out.trim() !== "ok") throw new Error(`activating ${main}: ${out}`);
      },
      debugLog() {
        const file = join(root, "wp-content/debug.log");
        return existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean) : [];
      },
      async stop() {
        const exited = [server, db].map((c) =>
          c.exitCode === null && c.signalCode === null ? new Promise((r) => c.once("exit", r)) : undefined,
        );
        signal(server, "SIGTERM");
        signal(db, "SIGTERM");
        await Promise.all(exited);
        cleanup();
      },
    };
  } catch (err) {
    cleanup();
    throw err;
  }
}
