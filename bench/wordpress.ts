// The WordPress plugin's bulk run against the same conversions sent straight to the service, at
// the same concurrency (issue #39: the plugin must reach ≥ 0.90× the service's images per second).
//
//   bun bench/wordpress.ts           ≥ 100 attachments from the bench corpus (~15 min on 2 cores)
//   bun bench/wordpress.ts --quick   12 attachments from the quick corpus's small wallpapers (~2 min)
//
// A private WordPress (test/support/wordpress.ts) makes the attachments (WordPress's six sizes
// and the -scaled file, by GD) before the plugin is connected; then, side by side on one server:
//   direct  every file the bulk run converts, in both formats, signed and sent by this process
//           through a pool of the server's per-key limit (max_in_progress of /v1/plugin/account);
//   plugin  Imgpress_Queue::run over the same library in one PHP process (as WP-Cron runs it),
//           which keeps that same number of conversions in flight.
// The direct run goes first and last (their mean is the reference), so drift on a shared machine
// affects both sides. "WordPress's own time" is the plugin's wall time minus the time PHP waited
// on the server's answers (reading files, building and signing bodies, writing copies, meta, SQL).
// Prints the figures; --write puts them in bench/RESULTS.md (its "WordPress plugin bulk run" section).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { buildWordPressZip } from "../scripts/build-wordpress.ts";
import { authHeaders, multipart } from "../test/support/imgpress.ts";
import { startServer } from "../test/support/server.ts";
import { extractOtp, startSmtpSink } from "../test/support/smtp.ts";
import { startWordPress } from "../test/support/wordpress.ts";
import { loadCorpus, smallImages } from "./lib/corpus.ts";
import { WORDPRESS_BLOCK, writeSection } from "./lib/results.ts";
import { fmt, progress } from "./lib/util.ts";

const { values } = parseArgs({ options: { quick: { type: "boolean" }, write: { type: "boolean" } } });
const quick = values.quick ?? false;
const WORK = join(import.meta.dir, ".work");
const ATTACHMENTS = quick ? 12 : 104;

const sources = quick ? await smallImages() : (await loadCorpus(WORK, false)).images;
progress(`wordpress bench: ${ATTACHMENTS} attachments from ${sources.length} corpus images`);
const sink = await startSmtpSink();
const server = await startServer({ env: { IMGPRESS_SMTP_URL: sink.url, IMGPRESS_SIGNATURE_BODY: "strict" } });
const wp = await startWordPress({ disableCron: true });
try {
  const files = Array.from({ length: ATTACHMENTS }, (_, i) => sources[i % sources.length]!.path);
  const t0 = performance.now();
  await wp.php(`require_once ABSPATH . 'wp-admin/includes/media.php'; require_once ABSPATH . 'wp-admin/includes/file.php'; require_once ABSPATH . 'wp-admin/includes/image.php';
    foreach (${JSON.stringify(files)} as $i => $f) { $tmp = wp_tempnam(); copy($f, $tmp); $id = media_handle_sideload(array('name' => "bench-$i." . pathinfo($f, PATHINFO_EXTENSION), 'tmp_name' => $tmp), 0); if (is_wp_error($id)) { echo $id->get_error_message(); exit(1); } }`);
  progress(
    `  WordPress made the sizes of ${ATTACHMENTS} attachments in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
  await wp.installPlugin(buildWordPressZip(join(WORK, "imgpress-wordpress.zip")));
  await wp.php(
    `var_dump(Imgpress_Connection::start('${server.url}', 'bench@example.com')); var_dump(Imgpress_Connection::confirm_certificate());`,
  );
  const code = extractOtp(await sink.waitFor((m) => m.subject.includes("code"), 10_000));
  const account = JSON.parse(
    await wp.php(
      `Imgpress_Connection::verify_code('${code}'); echo wp_json_encode(Imgpress_Connection::account(true));`,
    ),
  );
  const limit = Number(account.max_in_progress);
  // Without the limit the direct run would have no pool: a figure of nothing, said as a failure instead.
  if (!Number.isInteger(limit) || limit < 1)
    throw new Error(`the plugin's GET /v1/plugin/account answered no max_in_progress: ${JSON.stringify(account)}`);
  // The key pair, for the direct run: opened the way the plugin opens it.
  const keys = JSON.parse(
    await wp.php(
      `$c = Imgpress_Connection::get(); $k = Imgpress_Vault::key(); echo wp_json_encode(array('apiKey' => Imgpress_Vault::open($c['api_key'], $k), 'secretKey' => Imgpress_Vault::open($c['secret'], $k)));`,
    ),
  );
  const paths: string[] = JSON.parse(
    await wp.php(
      `$out = array(); foreach (get_posts(array('post_type' => 'attachment', 'numberposts' => -1, 'fields' => 'ids')) as $id) { foreach (Imgpress_Queue::files($id) as $p) { $out[] = $p; } } echo wp_json_encode($out);`,
    ),
  );
  const jobs = paths.flatMap((p) => ["avif", "webp"].map((format) => ({ path: p, format })));
  progress(`  ${jobs.length} conversions (${paths.length} files × 2 formats), ${limit} at once`);

  const direct = async (): Promise<number> => {
    const start = performance.now();
    let next = 0;
    const worker = async () => {
      while (next < jobs.length) {
        const job = jobs[next++]!;
        const bytes = readFileSync(job.path);
        const form = multipart({ format: job.format, quality: "lossy" }, bytes, job.path.split("/").pop()!);
        const res = await server.fetch("/v1/plugin/convert", {
          method: "POST",
          body: form.body as Uint8Array<ArrayBuffer>,
          headers: { "content-type": form.contentType, ...authHeaders(keys, "signed", form.body) },
        });
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`direct: ${res.status} for ${job.path}`);
      }
    };
    await Promise.all(Array.from({ length: limit }, worker));
    return (performance.now() - start) / 1000;
  };

  const first = await direct();
  progress(`  direct: ${first.toFixed(1)} s`);
  const plugin = JSON.parse(
    await wp.php(`Imgpress_Bulk::start(); $t = microtime(true); $made = 0; while (Imgpress_Bulk::status()['remaining'] > 0) { $n = Imgpress_Queue::run(3600); $made += $n; if ($n === 0) { sleep(1); } }
      echo wp_json_encode(array('seconds' => microtime(true) - $t, 'made' => $made, 'waited' => Imgpress_Client::$convert_seconds, 'errors' => Imgpress_Bulk::status()['errors']));`),
  );
  progress(`  plugin: ${plugin.seconds.toFixed(1)} s (${plugin.made} conversions, ${plugin.errors} errors)`);
  const last = await direct();
  progress(`  direct again: ${last.toFixed(1)} s`);
  if (plugin.made !== jobs.length)
    throw new Error(`the plugin made ${plugin.made} conversions, the direct run ${jobs.length}`);

  const reference = (first + last) / 2;
  const ratio = reference / plugin.seconds;
  const ownMs = ((plugin.seconds - plugin.waited) * 1000) / ATTACHMENTS;
  const lines = [
    `| figure | value |`,
    `| --- | --- |`,
    `| attachments (files, conversions) | ${ATTACHMENTS} (${paths.length}, ${jobs.length}) |`,
    `| conversions at once (server's max_in_progress) | ${limit} |`,
    `| direct to the service, images/s (mean of ${first.toFixed(1)} s and ${last.toFixed(1)} s) | ${fmt(jobs.length / reference)} |`,
    `| plugin bulk run, images/s (${plugin.seconds.toFixed(1)} s) | ${fmt(jobs.length / plugin.seconds)} |`,
    `| **plugin ÷ direct** (target ≥ 0.90) | **${fmt(ratio)}** |`,
    `| WordPress's own time per attachment | ${ownMs.toFixed(0)} ms |`,
  ];
  console.log(lines.join("\n"));
  if (values.write) {
    const when = new Date().toISOString().slice(0, 16).replace("T", " ");
    const scope = quick
      ? `\`bun bench/wordpress.ts --quick\`: ${ATTACHMENTS} attachments, fewer than the 100 the target is set for; the full run (\`bun bench/wordpress.ts --write\`, ${104} attachments) has not been made yet`
      : `\`bun bench/wordpress.ts\`: ${ATTACHMENTS} attachments from the bench corpus`;
    const markdown = [
      `<!-- wordpress bench:start (written by bench/wordpress.ts; npm run bench keeps it) -->`,
      `## WordPress plugin bulk run`,
      ``,
      `${scope}; one run, ${when} UTC, on this shared 2-core machine. The plugin's bulk run (Imgpress_Queue::run in one PHP process, as WP-Cron runs it) against the same conversions sent straight to the service with the same number in flight; the direct run went first and last and their mean is the reference. Above 1, the plugin's client (PHP's cURL) kept the server busier than the reference client (Bun's fetch): the plugin is not the bottleneck. "WordPress's own time" is the plugin's wall time minus the time PHP waited on the server's answers; most of it overlaps with conversions in flight.`,
      ``,
      ...lines,
      `<!-- wordpress bench:end -->`,
    ].join("\n");
    progress(`  written to ${writeSection(WORDPRESS_BLOCK, markdown)}`);
  }
} finally {
  await Promise.all([server.stop(), wp.stop(), sink.close()]);
}
