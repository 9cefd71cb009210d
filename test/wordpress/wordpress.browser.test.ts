/**
 * The WordPress plugin end to end, in a real WordPress (test/support/wordpress.ts: private
 * MariaDB, Debian's WordPress 6.1, PHP's built-in server) against a real imgpress server with an
 * SMTP sink, driven through Chromium as a site owner would: connect with the e-mailed code and the
 * certificate's fingerprint; upload through the media uploader; every size's copies on disk; the
 * media column; <picture> on a published post and the AVIF the browser loads; a bulk run over 30
 * older attachments, through a server stop; a revoked key; uninstall.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Page } from "playwright-core";
import sharp from "sharp";
import { buildWordPressZip } from "../../scripts/build-wordpress.ts";
import { hasChromium, openBrowser, type TestBrowser } from "../support/browser.ts";
import * as img from "../support/images.ts";
import { closedPort, unusedPorts } from "../support/ports.ts";
import { type RunningServer, runCli, startServer } from "../support/server.ts";
import { extractOtp, type SmtpSink, startSmtpSink } from "../support/smtp.ts";
import { hasWordPress, startWordPress, type WordPress, WP_ADMIN } from "../support/wordpress.ts";

const ready = hasWordPress() && hasChromium();
const OLD_ATTACHMENTS = 30;

let wp: WordPress;
let sink: SmtpSink;
let server: RunningServer;
let serverEnv: Record<string, string>;
let browser: TestBrowser;
let page: Page;
let scratch: string;
let fingerprint: string;

async function startImgpress(dataDir?: string): Promise<RunningServer> {
  const s = await startServer({ env: serverEnv, dataDir });
  const line = await s.waitForLog((l) => l.json?.msg === "imgpress listening");
  fingerprint = String(line.json!.certSha256);
  return s;
}

/** Runs WordPress's cron as a system cron would (DISABLE_WP_CRON sites call wp-cron.php). */
async function cron(): Promise<void> {
  await fetch(`${wp.url}/wp-cron.php`).then((r) => r.arrayBuffer());
}

async function until<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  timeoutMs = 60_000,
  everyMs = 500,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(everyMs);
  }
}

const meta = async (id: number, key: string) =>
  (await wp.php(`echo wp_json_encode(get_post_meta(${id}, '${key}', true));`)).trim();
/** What the queue knows, for a failure message. */
const diagnose = (id: number) =>
  wp.php(
    `echo wp_json_encode(array('blocked' => Imgpress_Queue::blocked(), 'status' => get_option('imgpress_status'), 'backoff' => get_option('imgpress_backoff'), 'lock' => get_option('imgpress_lock'), 'next' => wp_next_scheduled('imgpress_run_queue') - time(), 'doing_cron' => get_transient('doing_cron'), 'queue' => get_post_meta(${id}, '_imgpress_queue', true) - time(), 'record' => get_post_meta(${id}, '_imgpress', true), 'error' => get_post_meta(${id}, '_imgpress_error', true)));`,
  );
const pluginLines = () => wp.debugLog().filter((l) => l.includes("plugins/imgpress"));

beforeAll(async () => {
  if (!ready) return;
  scratch = mkdtempSync(join(tmpdir(), "imgpress-wp-e2e-"));
  const zip = buildWordPressZip(join(scratch, "imgpress-wordpress.zip"));
  sink = await startSmtpSink();
  const [port] = await unusedPorts(1);
  serverEnv = {
    IMGPRESS_SMTP_URL: sink.url,
    IMGPRESS_PORT: String(port),
    IMGPRESS_SIGNATURE_BODY: "strict",
    IMGPRESS_ALLOWED_EMAILS: "@example.com",
  };
  [server, wp] = await Promise.all([startImgpress(), startWordPress()]);
  // The library before the plugin: 30 photos at 640×480 (full, 300 and 150 wide).
  const files: string[] = [];
  for (let i = 0; i < OLD_ATTACHMENTS; i++) {
    const file = join(scratch, `old-${i}.jpg`);
    writeFileSync(
      file,
      await sharp(await img.photo(640, 480))
        .modulate({ hue: i * 11 })
        .jpeg({ quality: 90 })
        .toBuffer(),
    );
    files.push(file);
  }
  await wp.php(`require_once ABSPATH . 'wp-admin/includes/media.php'; require_once ABSPATH . 'wp-admin/includes/file.php'; require_once ABSPATH . 'wp-admin/includes/image.php';
    foreach (${JSON.stringify(files)} as $f) { $tmp = wp_tempnam(); copy($f, $tmp); $id = media_handle_sideload(array('name' => basename($f), 'tmp_name' => $tmp), 0); if (is_wp_error($id)) { echo $id->get_error_message(); exit(1); } }`);
  await wp.installPlugin(zip);
  browser = await openBrowser({ origin: wp.url, certPem: "" });
  page = await browser.newPage();
  await page.goto(`${wp.url}/wp-login.php`);
  await page.fill("#user_login", WP_ADMIN.user);
  await page.fill("#user_pass", WP_ADMIN.password);
  await Promise.all([page.waitForURL(/wp-admin/), page.click("#wp-submit")]);
}, 120_000);

afterAll(async () => {
  if (!ready) return;
  await browser?.close();
  await Promise.all([server?.stop(), wp?.stop(), sink?.close()]);
  rmSync(scratch, { recursive: true, force: true });
});

describe.skipIf(!ready)("the imgpress plugin in a real WordPress", () => {
  /** Submits the connect form (and confirms the fingerprint when asked); resolves to the notice shown. */
  async function tryConnect(address: string, email: string): Promise<string> {
    await page.goto(`${wp.url}/wp-admin/options-general.php?page=imgpress`);
    await page.fill("#imgpress-server", address);
    await page.fill("#imgpress-email", email);
    await Promise.all([page.waitForLoadState("load"), page.click("text=Send me a code")]);
    if (await page.$(".imgpress-fingerprint")) {
      await page.check("input[name=matches]");
      await Promise.all([page.waitForLoadState("load"), page.click("text=Trust this certificate and send me a code")]);
    }
    const notice = (await page.textContent(".imgpress-flash")) ?? "";
    if (await page.$("button:has-text('Start again')"))
      await Promise.all([page.waitForLoadState("load"), page.click("button:has-text('Start again')")]);
    return notice;
  }

  test("errors a person can act on: an unreachable server, an address off the allowlist, a mail failure", async () => {
    const closed = await closedPort();
    expect(await tryConnect(`https://127.0.0.1:${closed}`, WP_ADMIN.email)).toContain(
      `The imgpress server at https://127.0.0.1:${closed} did not answer. Check the address and port`,
    );
    expect(await tryConnect(server.url, "someone@elsewhere.test")).toContain(
      "not on its allowlist (IMGPRESS_ALLOWED_EMAILS)",
    );
    sink.setReject(true);
    try {
      expect(await tryConnect(server.url, "mailfail@example.com")).toContain("could not send the e-mail with the code");
    } finally {
      sink.setReject(false);
    }
    expect(await page.content()).not.toMatch(/cURL|Warning:|Fatal/);
    expect(wp.sql("SELECT COUNT(*) FROM wp_options WHERE option_name = 'imgpress_connection'").trim()).toBe("0");
  }, 60_000);

  test("connect: fingerprint confirmed, e-mailed code typed, key stored sealed", async () => {
    await page.goto(`${wp.url}/wp-admin/options-general.php?page=imgpress`);
    await page.fill("#imgpress-server", server.url);
    expect(await page.inputValue("#imgpress-email")).toBe(WP_ADMIN.email);
    await Promise.all([page.waitForLoadState("load"), page.click("text=Send me a code")]);
    await page.waitForSelector(".imgpress-fingerprint code");
    expect((await page.textContent(".imgpress-fingerprint code"))!.trim()).toBe(fingerprint);
    await page.screenshot({ path: join(scratch, "1-fingerprint.png") });
    const before = sink.messages.length;
    await page.check("input[name=matches]");
    await Promise.all([
      page.waitForSelector("#imgpress-code"),
      page.click("text=Trust this certificate and send me a code"),
    ]);
    const mail = await sink.waitFor((m) => sink.messages.indexOf(m) >= before && m.to.includes(WP_ADMIN.email), 10_000);
    await page.fill("#imgpress-code", extractOtp(mail));
    await Promise.all([page.waitForSelector(".imgpress-status-table"), page.click("button[value=imgpress_verify]")]);
    const status = await page.textContent(".imgpress-status-table");
    expect(status).toContain(server.url);
    expect(status).toMatch(/imp_[\w-]{8}…/);
    expect(status).toContain("0 conversions");
    await page.screenshot({ path: join(scratch, "2-connected.png"), fullPage: true });
    // The secret never reaches a page or the options table in clear.
    const stored = wp.sql("SELECT option_value FROM wp_options WHERE option_name = 'imgpress_connection'");
    expect(stored).not.toMatch(/imps_|imp_[A-Za-z0-9_-]{43}/);
    expect(await page.content()).not.toContain("imps_");
  }, 60_000);

  test("the account asked for again within the same second is answered, not refused as a replayed signature", async () => {
    const answers = JSON.parse(
      await wp.php(
        "echo wp_json_encode(array(Imgpress_Connection::account(true), Imgpress_Connection::account(true), Imgpress_Connection::account(true)));",
      ),
    ) as { max_in_progress?: number; errors?: unknown }[];
    expect(answers.map((a) => a.errors ?? typeof a.max_in_progress)).toEqual(["number", "number", "number"]);
  });

  let uploaded = 0;
  test("an upload through the media uploader: every size gets valid WebP and AVIF copies; the column, the details, Remove copies and Re-optimize", async () => {
    const photo = join(scratch, "holiday.jpg");
    writeFileSync(
      photo,
      await sharp(await img.photo(3000, 2000))
        .jpeg({ quality: 88 })
        .toBuffer(),
    );
    await page.goto(`${wp.url}/wp-admin/media-new.php`);
    await page.setInputFiles("#plupload-upload-ui input[type=file]", photo);
    await page.waitForSelector(".media-item .edit-attachment", { timeout: 60_000 });
    uploaded = Number(wp.sql("SELECT MAX(ID) FROM wp_posts WHERE post_type = 'attachment'").trim());
    // The upload only queued the work (WP-Cron, spawned by the page loads, may have done it already).
    expect([await meta(uploaded, "_imgpress_queue"), await meta(uploaded, "_imgpress_done")]).not.toEqual(['""', '""']);
    // The queue runs from cron (here called as a system cron would).
    await until("the upload's copies", async () => {
      await cron();
      return (await meta(uploaded, "_imgpress_done")) !== '""';
    });
    const record = JSON.parse(await meta(uploaded, "_imgpress"));
    const sizes = Object.keys(record.sizes).sort();
    // WordPress's six sizes and the -scaled main file (the theme may add its own, e.g. post-thumbnail).
    expect(sizes).toEqual(
      expect.arrayContaining(["1536x1536", "2048x2048", "full", "large", "medium", "medium_large", "thumbnail"]),
    );
    for (const name of sizes) {
      const entry = record.sizes[name];
      const file = join(wp.uploads, entry.file);
      const source = await sharp(file).metadata();
      for (const format of ["avif", "webp"]) {
        expect(typeof entry[format]).toBe("number");
        const copy = await sharp(`${file}.${format}`).metadata();
        expect({
          size: name,
          format: copy.format === "heif" ? copy.compression : copy.format,
          w: copy.width,
          h: copy.height,
        }).toEqual({
          size: name,
          format: format === "avif" ? "av1" : "webp",
          w: source.width,
          h: source.height,
        });
        expect(entry[format]).toBe(readFileSync(`${file}.${format}`).length);
        expect(entry[format]).toBeLessThan(entry.bytes);
      }
    }
    expect(record.sizes.full.file).toMatch(/-scaled\.jpg$/);
    await page.goto(`${wp.url}/wp-admin/upload.php?mode=list`);
    const cell = await page.textContent(`#post-${uploaded} .imgpress-summary`);
    expect(cell).toMatch(new RegExp(`saved \\(\\d+(\\.\\d)? %\\) over ${sizes.length} sizes`));
    await page.screenshot({ path: join(scratch, "2b-media-list.png") });
    // The attachment's details: one row per size, with both copies' sizes.
    await page.goto(`${wp.url}/wp-admin/post.php?post=${uploaded}&action=edit`);
    expect(await page.$$eval(".imgpress-sizes tbody tr", (rows) => rows.length)).toBe(sizes.length);
    expect(await page.textContent(".imgpress-sizes tbody")).toMatch(/KB \(−\d+(\.\d)? %\)/);
    await page.screenshot({ path: join(scratch, "2c-details.png"), fullPage: true });

    // Remove copies, then Re-optimize: the per-image actions (upload_files and a nonce each).
    const medium = join(wp.uploads, record.sizes.medium.file);
    await Promise.all([page.waitForLoadState("load"), page.click(".imgpress-details a:has-text('Remove copies')")]);
    expect(existsSync(`${medium}.avif`) || existsSync(`${medium}.webp`)).toBe(false);
    expect(await page.textContent(".imgpress-details")).toContain("Not optimized");
    await Promise.all([page.waitForLoadState("load"), page.click(".imgpress-details a:has-text('Re-optimize')")]);
    await until("the copies made again", async () => {
      await cron();
      return (await meta(uploaded, "_imgpress_done")) !== '""';
    });
    expect(existsSync(`${medium}.avif`) && existsSync(`${medium}.webp`)).toBe(true);
    // A forged link (no valid nonce) changes nothing.
    const forged = await page.goto(
      `${wp.url}/wp-admin/admin-post.php?action=imgpress_remove&id=${uploaded}&_wpnonce=0123456789`,
    );
    expect(forged?.status()).toBe(403);
    expect(existsSync(`${medium}.avif`)).toBe(true);
  }, 120_000);

  test("a published post serves <picture> with AVIF and WebP sources, and the browser loads the AVIF", async () => {
    const url = await wp.php(`
      wp_set_current_user(1); // an administrator may post <picture> (unfiltered_html)
      $src = wp_get_attachment_image_url(${uploaded}, 'large');
      $id = wp_insert_post(array('post_status' => 'publish', 'post_title' => 'Holiday', 'post_content' =>
        '<!-- wp:image {"id":${uploaded},"sizeSlug":"large"} --><figure class="wp-block-image size-large"><img src="' . $src . '" alt="beach" class="wp-image-${uploaded}"/></figure><!-- /wp:image -->'
        . '<p>Already wrapped:</p><picture><source type="image/webp" srcset="' . $src . '.webp"><img src="' . $src . '" alt="kept" class="wp-image-${uploaded}"></picture>'));
      set_post_thumbnail($id, ${uploaded});
      echo get_permalink($id);`);
    const html = await (await fetch(url.trim())).text();
    const pictures = html.match(/<picture class="imgpress-picture">.*?<\/picture>/gs) ?? [];
    // The content image and the featured image; the image already inside a <picture> is left alone.
    expect(pictures.length).toBe(2);
    for (const p of pictures) {
      expect(p).toMatch(
        /^<picture class="imgpress-picture"><source type="image\/avif" srcset="[^"]+\.jpg\.avif \d+w(, [^"]+\.jpg\.avif \d+w)+" sizes="[^"]+"><source type="image\/webp" srcset="[^"]+\.jpg\.webp \d+w/,
      );
      expect(p).toMatch(/<img [^>]*srcset="[^"]+\.jpg \d+w/);
    }
    expect(html).toContain('alt="kept"');
    expect(html).not.toMatch(/<picture[^>]*>(?:(?!<\/picture>).)*<picture/s);
    expect(html).not.toContain("data-imgpress-skip");
    const avif: string[] = [];
    page.on("response", (r) => {
      if (r.url().endsWith(".avif") && r.status() === 200) avif.push(r.url());
    });
    await page.goto(url.trim());
    await page.waitForLoadState("networkidle");
    const current = await page.evaluate(
      () => (document.querySelector(".entry-content picture img") as HTMLImageElement).currentSrc,
    );
    expect(current).toMatch(/\.jpg\.avif$/);
    expect(avif.length).toBeGreaterThan(0);
    expect(wp.requests.some((l) => /\[200\]: GET \/wp-content\/uploads\/.+\.jpg\.avif/.test(l))).toBe(true);
  }, 60_000);

  test("bulk: 30 older attachments reach 100 % with the bar moving, through a server stop", async () => {
    await page.goto(`${wp.url}/wp-admin/upload.php?page=imgpress-bulk`);
    const seen = new Set<string>();
    // Every reading counts, the waits' own too: the watch's last reading may still be on its way
    // when a wait sees 100 and the watch is stopped (CI once saw 100 reached but not recorded).
    const progress = async () => {
      const v = await page.getAttribute(".imgpress-bar", "aria-valuenow");
      if (v !== null) seen.add(v);
      return v;
    };
    const watch = setInterval(() => progress().catch(() => {}), 200);
    try {
      await page.click("#imgpress-start");
      await until("a third of the bulk run", async () => Number(await progress()) >= 20, 60_000, 200);
      await page.screenshot({ path: join(scratch, "3-bulk-running.png") });
      const dataDir = server.dataDir;
      await server.stop({ keepData: true });
      await until(
        "the page saying the server does not answer",
        async () => ((await page.textContent("#imgpress-message")) ?? "").includes("does not answer"),
        30_000,
        200,
      );
      const stalled = await page.getAttribute(".imgpress-bar", "aria-valuenow");
      await Bun.sleep(3000);
      expect(await page.getAttribute(".imgpress-bar", "aria-valuenow")).toBe(stalled);
      expect(Number(stalled)).toBeLessThan(100);
      await page.screenshot({ path: join(scratch, "4-bulk-waiting.png") });
      server = await startImgpress(dataDir);
      await until("100 %", async () => (await progress()) === "100", 90_000, 300);
    } finally {
      clearInterval(watch);
    }
    await page.screenshot({ path: join(scratch, "5-bulk-done.png") });
    // The bar moved: from where it started, through a value short of 100 (at least the stalled one),
    // to 100. On a fast machine a batch may take it from the stall to 100 between two readings.
    const values = [...seen].map(Number);
    expect(values.some((v) => v > 0 && v < 100)).toBe(true);
    expect(values).toContain(100);
    expect(seen.size).toBeGreaterThanOrEqual(3);
    expect(wp.sql("SELECT COUNT(*) FROM wp_postmeta WHERE meta_key = '_imgpress_done'").trim()).toBe(
      String(OLD_ATTACHMENTS + 1),
    );
    expect(
      wp.sql("SELECT COUNT(*) FROM wp_postmeta WHERE meta_key IN ('_imgpress_queue', '_imgpress_error')").trim(),
    ).toBe("0");
    expect(await page.textContent("#imgpress-count")).toContain(`${OLD_ATTACHMENTS} of ${OLD_ATTACHMENTS}`);
  }, 200_000);

  test("a revoked key: the Reconnect notice, and uploads still succeed", async () => {
    const revoked = await runCli(["keys", "revoke-email", WP_ADMIN.email], server.env);
    expect(revoked.code).toBe(0);
    const photo = join(scratch, "after-revoke.jpg");
    writeFileSync(photo, await img.photo(800, 600));
    await page.goto(`${wp.url}/wp-admin/media-new.php`);
    await page.setInputFiles("#plupload-upload-ui input[type=file]", photo);
    await page.waitForSelector(".media-item .edit-attachment", { timeout: 60_000 });
    const id = Number(wp.sql("SELECT MAX(ID) FROM wp_posts WHERE post_type = 'attachment'").trim());
    expect(
      JSON.parse(await wp.php(`echo wp_json_encode(array_keys(wp_get_attachment_metadata(${id})['sizes']));`)),
    ).toContain("medium");
    await until("the revoked state", async () => {
      await cron();
      return wp.sql("SELECT option_value FROM wp_options WHERE option_name = 'imgpress_status'").includes("revoked");
    });
    await page.goto(`${wp.url}/wp-admin/`);
    const notice = await page.textContent(".imgpress-notice-revoked");
    expect(notice).toContain("revoked");
    expect(notice).not.toMatch(/cURL|Warning|INVALID_API_KEY/);
    expect(await page.getAttribute(".imgpress-notice-revoked a.imgpress-reconnect", "href")).toContain("page=imgpress");
    await page.screenshot({ path: join(scratch, "6-revoked.png") });
    expect(await meta(id, "_imgpress_queue")).not.toBe('""');

    // Reconnecting (the same server, its certificate confirmed again) gets a new key; the waiting upload is then optimized.
    await Promise.all([
      page.waitForSelector("#imgpress-server"),
      page.click(".imgpress-notice-revoked a.imgpress-reconnect"),
    ]);
    expect(await page.inputValue("#imgpress-server")).toBe(server.url);
    // Another address of the owner's: the server sends one code per address per minute.
    await page.fill("#imgpress-email", "webmaster@example.com");
    await Promise.all([page.waitForSelector(".imgpress-fingerprint code"), page.click("text=Send me a code")]);
    const before = sink.messages.length;
    await page.check("input[name=matches]");
    await Promise.all([
      page.waitForSelector("#imgpress-code"),
      page.click("text=Trust this certificate and send me a code"),
    ]);
    const mail = await sink.waitFor(
      (m) => sink.messages.indexOf(m) >= before && m.to.includes("webmaster@example.com"),
      10_000,
    );
    await page.fill("#imgpress-code", extractOtp(mail));
    await Promise.all([page.waitForSelector(".imgpress-status-table"), page.click("button[value=imgpress_verify]")]);
    expect(await page.$(".imgpress-notice-revoked")).toBeNull();
    await until("the waiting upload's copies", async () => {
      await cron();
      return (await meta(id, "_imgpress_done")) !== '""';
    }).catch(async (err) => {
      throw new Error(`${err.message}; the queue's state: ${await diagnose(id)}`);
    });
  }, 90_000);

  test("no PHP notice or warning from the plugin", () => {
    expect(pluginLines()).toEqual([]);
  });

  test("deleting an attachment deletes its copies", async () => {
    const id = Number(wp.sql("SELECT MIN(ID) FROM wp_posts WHERE post_type = 'attachment'").trim());
    const copies = JSON.parse(
      await wp.php(
        `$out = array(); foreach (Imgpress_Queue::files(${id}) as $p) { foreach (array('avif', 'webp') as $f) { if (file_exists("$p.$f")) { $out[] = "$p.$f"; } } } echo wp_json_encode($out);`,
      ),
    ) as string[];
    expect(copies.length).toBeGreaterThanOrEqual(6);
    await wp.php(`wp_delete_attachment(${id}, true);`);
    expect(copies.filter((f) => existsSync(f))).toEqual([]);
  });

  test("uninstall, with the copies chosen to go too, leaves nothing of the plugin in the database or beside the images", async () => {
    const copies = join(wp.uploads);
    const countCopies = () =>
      Bun.spawnSync(["find", copies, "-name", "*.jpg.avif", "-o", "-name", "*.jpg.webp"])
        .stdout.toString()
        .trim()
        .split("\n")
        .filter(Boolean).length;
    expect(countCopies()).toBeGreaterThan(OLD_ATTACHMENTS);
    // The owner's choice, saved through the settings form (Settings API).
    await page.goto(`${wp.url}/wp-admin/options-general.php?page=imgpress`);
    await page.check("input[name='imgpress_settings[on_uninstall]'][value=delete]");
    await Promise.all([page.waitForURL(/settings-updated=true/), page.click("#submit")]);
    expect(await page.isChecked("input[name='imgpress_settings[on_uninstall]'][value=delete]")).toBe(true);
    expect(await page.isChecked("input[name='imgpress_settings[formats][]'][value=avif]")).toBe(true);
    const out =
      await wp.php(`require_once ABSPATH . 'wp-admin/includes/plugin.php'; require_once ABSPATH . 'wp-admin/includes/file.php';
      deactivate_plugins('imgpress/imgpress.php'); $r = delete_plugins(array('imgpress/imgpress.php')); echo is_wp_error($r) ? $r->get_error_message() : 'deleted';`);
    expect(out.trim()).toBe("deleted");
    expect(
      wp
        .sql("SELECT option_name FROM wp_options WHERE option_name LIKE '%imgpress%' OR option_value LIKE '%imgpress%'")
        .trim(),
    ).toBe("");
    expect(wp.sql("SELECT DISTINCT meta_key FROM wp_postmeta WHERE meta_key LIKE '%imgpress%'").trim()).toBe("");
    expect(existsSync(join(wp.root, "wp-content/plugins/imgpress"))).toBe(false);
    expect(countCopies()).toBe(0);
    expect(existsSync(join(copies, "imgpress"))).toBe(false);
    if (process.env.IMGPRESS_WP_SCREENSHOTS) Bun.spawnSync(["cp", "-r", scratch, process.env.IMGPRESS_WP_SCREENSHOTS]);
  }, 60_000);
});
