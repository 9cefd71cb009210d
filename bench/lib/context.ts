// Everything the bench sections share in one run: sizes, corpus, references, and the servers and
// keys they start lazily. One object per run, passed to every section (no module-level state).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type SmtpSink, startSmtpSink } from "../../test/support/smtp.ts";
import type { Image } from "./corpus.ts";
import { ipxGet, type Peer, startIpx } from "./peer.ts";
import { type Reference, startReference } from "./reference.ts";
import { type Keys, obtainKeys, type Service, send, signedConvert, startService, tempDir } from "./service.ts";
import { fmt, mib, PeakRss, procStatus, progress, sleep } from "./util.ts";

/** Run sizes: the full run is what RESULTS.md reports; --quick only proves the machinery works. */
export function sizes(quick: boolean) {
  return quick
    ? {
        overheadReps: 1,
        passes: 1,
        pools: [2],
        rounds: 1,
        bigUploads: 4,
        firstStarts: 1,
        warmStarts: 2,
        authSamples: 3,
        worstConvReps: 1,
      }
    : {
        overheadReps: 3,
        passes: 1,
        pools: [1, 2, 3, 4],
        rounds: 3,
        bigUploads: 8,
        firstStarts: 3,
        warmStarts: 7,
        authSamples: 9,
        worstConvReps: 3,
      };
}

/** Concurrent client loops of the saturated runs. */
export const CLIENTS = 4;
/** What src/main.ts sets with mallopt() (commit 04ce795), for a reference worker with the same allocator. */
export const SERVICE_MALLOPT = "arena_max=2,mmap_threshold=16777216";
/** How long a process is left alone before its idle RSS is read. */
export const IDLE_SETTLE_MS = 2000;

/** `123 MiB` from KiB. */
export const MiB = (kib: number) => `${fmt(mib(kib), 0)} MiB`;

/** One saturated run of a server, ipx or the in-process pool. */
export interface Run {
  label: string;
  ips: number;
  ms: number;
  count: number;
  peakKiB: number;
  errors: string[];
}

/** The run's shared state and the helpers sections use. */
export class Bench {
  readonly P: ReturnType<typeof sizes>;
  /** In-process WebP time of each image once the overhead section has measured it (ms): orders the saturated runs. */
  readonly costs = new Map<string, number>();
  /** Idle RSS of the compiled binary after a warm start, when the start-up section measured it. */
  idleBinary?: Record<string, number>;
  /** The data folder of the shared server (its keys stay valid for later servers on it). */
  readonly dataDir = tempDir("data");
  private readonly files = new Map<string, Buffer>();
  private shared?: Service;
  private sharedKeys?: Keys;
  private ipx?: Peer;

  private constructor(
    readonly quick: boolean,
    readonly images: Image[],
    readonly worst: Image[],
    /** Where the corpus files live (for ipx). */
    readonly corpusDirs: string[],
    readonly ref: Reference,
    /** The same reference with src/main.ts's allocator settings, to split the service's ratios. */
    readonly refTuned: Reference,
    readonly sink: SmtpSink,
  ) {
    this.P = sizes(quick);
  }

  /** Starts the references and the SMTP sink for a run over `images` and `worst`. */
  static async start(quick: boolean, images: Image[], worst: Image[], corpusDirs: string[]): Promise<Bench> {
    const [ref, refTuned, sink] = await Promise.all([
      startReference(),
      startReference({ BENCH_MALLOPT: SERVICE_MALLOPT }),
      startSmtpSink(),
    ]);
    return new Bench(quick, images, worst, corpusDirs, ref, refTuned, sink);
  }

  /** The bytes of an image (read once). */
  bytesOf(img: Pick<Image, "path">): Buffer {
    let b = this.files.get(img.path);
    if (!b) this.files.set(img.path, (b = readFileSync(img.path)));
    return b;
  }

  /** `bun src/main.ts` on the run's data folder, started on first use and kept until `releaseService`. */
  async service(): Promise<Service> {
    if (!this.shared) {
      progress("starting `bun src/main.ts` with a fresh data dir…");
      this.shared = await startService({ kind: "source", dataDir: this.dataDir, sink: this.sink });
    }
    return this.shared;
  }

  /** Keys obtained once through the OTP flow (the code caught by the SMTP sink). */
  async keys(): Promise<Keys> {
    if (!this.sharedKeys) {
      progress("obtaining keys through the OTP flow (code caught by the SMTP sink)…");
      this.sharedKeys = await obtainKeys(await this.service());
    }
    return this.sharedKeys;
  }

  /** The ipx peer, serving the corpus with the shared server's certificate. */
  async peer(): Promise<Peer> {
    if (!this.ipx) {
      const svc = await this.service();
      this.ipx = await startIpx(this.corpusDirs, join(this.dataDir, "tls", "self-signed.pem"), svc.ca);
      progress(
        `ipx up (sharp ${this.ipx.info.sharp}, libvips ${this.ipx.info.vips}, ${this.ipx.info.concurrency} thread(s), Node ${this.ipx.info.node})`,
      );
    }
    return this.ipx;
  }

  /** Stops the shared server (a section that needs the machine to itself calls this first). */
  async releaseService(): Promise<void> {
    await this.shared?.stop();
    this.shared = undefined;
  }

  /** Stops the ipx peer. */
  async releasePeer(): Promise<void> {
    await this.ipx?.stop();
    this.ipx = undefined;
  }

  /** Stops everything the run started. */
  async close(): Promise<void> {
    await this.releaseService();
    await this.releasePeer();
    await Promise.all([this.ref.stop(), this.refTuned.stop(), this.sink.close()]);
  }

  /**
   * Jobs for a saturated run: `passes` × the corpus, most expensive first (measured in-process time
   * when known, else megapixels), so every run ends with short jobs and little idle tail.
   */
  jobsOf(images: Image[], passes: number): Image[] {
    const cost = (i: Image) => this.costs.get(i.path) ?? i.mp * 100;
    return Array.from({ length: passes }, () => images)
      .flat()
      .sort((a, b) => cost(b) - cost(a));
  }

  /** CLIENTS concurrent signed uploads of `jobs` to `svc`, with its peak RSS. */
  async runService(svc: Service, keys: Keys, jobs: Image[], label = "service, 4 clients"): Promise<Run> {
    const reqs = jobs.map((j) => signedConvert(keys, this.bytesOf(j), filename(j)));
    const peak = new PeakRss(svc.pid).start();
    const r = await saturate(reqs, CLIENTS, (req) => send(svc, req));
    return logRun({
      label,
      ips: (jobs.length * 1000) / r.ms,
      ms: r.ms,
      count: jobs.length,
      peakKiB: peak.stop(),
      errors: r.errors,
    });
  }

  /** CLIENTS concurrent ipx GETs of `jobs`, with its peak RSS. */
  async runIpx(peer: Peer, jobs: Image[], label = "ipx, 4 clients"): Promise<Run> {
    const peak = new PeakRss(peer.pid).start();
    const r = await saturate(jobs, CLIENTS, (job) => ipxGet(peer, job.rel));
    return logRun({
      label,
      ips: (jobs.length * 1000) / r.ms,
      ms: r.ms,
      count: jobs.length,
      peakKiB: peak.stop(),
      errors: r.errors,
    });
  }

  /** `jobs` through an in-process pool of `size` in reference worker `ref`, with its peak RSS. */
  async runPool(ref: Reference, jobs: Image[], size: number, label = `in-process pool of ${size}`): Promise<Run> {
    const peak = new PeakRss(ref.pid).start();
    const r = await ref.call<{ ms: number; count: number }>({
      op: "pool",
      paths: jobs.map((j) => j.path),
      size,
      format: "webp",
    });
    return logRun({ label, ips: (r.count * 1000) / r.ms, ms: r.ms, count: r.count, peakKiB: peak.stop(), errors: [] });
  }
}

/** The file name of an image. */
export const filename = (img: Image) => img.path.split("/").at(-1)!;

/** /proc status of `pid` after `settleMs` (IDLE_SETTLE_MS unless given). */
export async function idleRss(pid: number, settleMs = IDLE_SETTLE_MS): Promise<Record<string, number>> {
  await sleep(settleMs);
  return procStatus(pid) ?? {};
}

/** `n` concurrent loops draining `jobs` through `run`. */
async function saturate<T>(
  jobs: T[],
  n: number,
  run: (job: T) => Promise<{ status: number }>,
): Promise<{ ms: number; errors: string[] }> {
  let next = 0;
  const errors: string[] = [];
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < jobs.length) {
        const r = await run(jobs[next++]!);
        if (r.status !== 200) errors.push(`${r.status} ${(r as { error?: string }).error ?? ""}`.trim());
      }
    }),
  );
  return { ms: performance.now() - t0, errors };
}

function logRun(run: Run): Run {
  progress(
    `throughput ${run.label}: ${fmt(run.ips)} img/s, peak RSS ${MiB(run.peakKiB)}${run.errors.length ? `, ${run.errors.length} errors: ${run.errors[0]}` : ""}`,
  );
  return run;
}
