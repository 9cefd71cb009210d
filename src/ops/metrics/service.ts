import { Counter, Gauge, Histogram, Registry } from "prom-client";
import type { ConversionGate } from "../../conversion/gate.ts";
import type { ConversionEvent } from "../../conversion/service.ts";
import { API_PREFIX, REQUEST_OTP_PATH, VERIFY_OTP_PATH } from "../../core/http/paths.ts";
import type { ResponseObserver } from "../../core/http/serve.ts";
import { runtime } from "../../core/version.ts";
import { type GateSizes, registerDatabaseFileGauge, registerServiceGauges } from "./gauges.ts";
import { registerProcessMetrics } from "./process.ts";

/** One answered HTTP request, as the runtime's fetch wrapper saw it. */
export interface HttpObservation {
  method: string;
  /** The route template (`/v1/plugin/convert`), or null when no route matched. */
  route: string | null;
  status: number;
  /** The `code` of a JSON error answer, when there was one. */
  errorCode: string | undefined;
  seconds: number;
}

/** Label value for requests that matched no route: raw paths would make the label unbounded. */
const UNMATCHED_ROUTE = "unmatched";

const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);
const OTP_REQUEST_ROUTE = API_PREFIX + REQUEST_OTP_PATH;
const OTP_VERIFY_ROUTE = API_PREFIX + VERIFY_OTP_PATH;

/**
 * The Prometheus registry of one service instance. It only observes: the conversion service,
 * the mailer and the HTTP wrapper report to it, and nothing reads it but the scrape.
 */
export class Metrics {
  /** The registry rendered by GET /internal/metrics. */
  readonly registry = new Registry();
  private readonly httpRequests = this.counter(
    "imgpress_http_requests_total",
    "HTTP requests answered, by method, route template and status.",
    ["method", "route", "status"],
  );
  private readonly httpDuration = new Histogram({
    name: "imgpress_http_request_duration_seconds",
    help: "Time from receiving a request to its response headers, by route template (upload time included).",
    labelNames: ["route"],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });
  private readonly conversions = this.counter(
    "imgpress_conversions_total",
    "Authenticated conversion attempts, by format, quality and outcome (ok or the error code).",
    ["format", "quality", "outcome"],
  );
  private readonly conversionDuration = new Histogram({
    name: "imgpress_conversion_duration_seconds",
    help: "Time inside the conversion pipeline (decode, resize, encode) of successful conversions; upload and queue wait excluded.",
    labelNames: ["format", "quality"],
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });
  private readonly queueWait = new Histogram({
    name: "imgpress_queue_wait_seconds",
    help: "Time a received upload waited for a conversion slot.",
    buckets: [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  private readonly bytesIn = this.counter(
    "imgpress_conversion_bytes_in_total",
    "Bytes of images received by conversion attempts.",
  );
  private readonly bytesOut = this.counter("imgpress_conversion_bytes_out_total", "Bytes of converted images sent.");
  private readonly guardEncodes = this.counter(
    "imgpress_quality_guard_encodes_total",
    "Encoder runs the quality guard added beyond each preset encode, by format.",
    ["format"],
  );
  private readonly authFailures = this.counter(
    "imgpress_auth_failures_total",
    "401 answers (bad key, signature or one-time code), by error code.",
    ["reason"],
  );
  private readonly otpRequests = this.counter(
    "imgpress_otp_requests_total",
    "Answers of request-otp: sent, or the error code.",
    ["outcome"],
  );
  private readonly otpVerifications = this.counter(
    "imgpress_otp_verifications_total",
    "Answers of verify-otp: issued, or the error code.",
    ["outcome"],
  );
  private readonly abandoned = this.counter(
    "imgpress_conversions_abandoned_total",
    "Conversion slots given back while the work of a timed-out conversion had still not stopped (presumed hung encoder).",
  );
  private readonly mail = this.counter("imgpress_mail_total", "E-mails handed to the mail transport: sent or failed.", [
    "outcome",
  ]);

  /** `databaseFile`: the embedded database's path, or null on a database server (whose size its own tools report). */
  constructor(
    gate: ConversionGate,
    sizes: GateSizes,
    databaseFile: string | null = null,
    runtime: string = runtimeName(),
  ) {
    registerProcessMetrics(this.registry);
    registerServiceGauges(this.registry, gate, sizes, runtime);
    if (databaseFile !== null) registerDatabaseFileGauge(this.registry, databaseFile);
  }

  private counter(name: string, help: string, labelNames: string[] = []): Counter {
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }

  /** Conversion observer: one call per attempt, registered with `ConvertService.observe`. */
  observeConversion(event: ConversionEvent): void {
    const format = event.format ?? "none";
    const quality = event.quality ?? "none";
    this.conversions.inc({ format, quality, outcome: event.outcome });
    this.bytesIn.inc(event.bytesIn);
    this.bytesOut.inc(event.bytesOut);
    if (event.guardEncodes > 0) this.guardEncodes.inc({ format }, event.guardEncodes);
    // Only attempts that reached the gate have a wait (a form or header refused first never queued).
    if (event.queueWaitMs !== null) this.queueWait.observe(event.queueWaitMs / 1000);
    if (event.outcome === "ok") this.conversionDuration.observe({ format, quality }, event.convertMs / 1000);
  }

  /** One answered request; OTP outcomes and auth failures are read off the answer, not the services. */
  observeHttp(o: HttpObservation): void {
    const route = o.route ?? UNMATCHED_ROUTE;
    this.httpRequests.inc({ method: METHODS.has(o.method) ? o.method : "other", route, status: String(o.status) });
    this.httpDuration.observe({ route }, o.seconds);
    const outcome = o.errorCode ?? (o.status < 400 ? null : `HTTP_${o.status}`);
    if (o.status === 401) this.authFailures.inc({ reason: outcome ?? "HTTP_401" });
    if (route === OTP_REQUEST_ROUTE) this.otpRequests.inc({ outcome: outcome ?? "sent" });
    if (route === OTP_VERIFY_ROUTE) this.otpVerifications.inc({ outcome: outcome ?? "issued" });
  }

  /** The runtime wrapper's observer: labels the answer from the route and code the app recorded on the request. */
  readonly observeResponse: ResponseObserver = (request, response, meta) =>
    this.observeHttp({
      method: request.method,
      route: meta.route ?? null,
      status: response.status,
      errorCode: meta.errorCode,
      seconds: (performance.now() - meta.startedAt) / 1000,
    });

  /** Mail observer: one call per message handed to the transport. */
  observeMail(outcome: "sent" | "failed"): void {
    this.mail.inc({ outcome });
  }

  /** Gate observer: a timed-out conversion's slot was given back before its work stopped. */
  observeAbandoned(): void {
    this.abandoned.inc();
  }

  /** The served TLS certificate's end (seconds since the epoch), for an alert before clients refuse it; absent until set (behind a proxy). */
  observeCertificate(notAfter: Date): void {
    this.certificateEnd ??= new Gauge({
      name: "imgpress_tls_certificate_expiry_timestamp_seconds",
      help: "When the TLS certificate this instance serves stops being valid (Unix time); a renewed file is served after a restart.",
      registers: [this.registry],
    });
    this.certificateEnd.set(Math.floor(notAfter.getTime() / 1000));
  }

  private certificateEnd: Gauge | undefined;

  /** The exposition text. */
  render(): Promise<string> {
    return this.registry.metrics();
  }
}

// The build_info label keeps its lower-case spelling ("bun 1.4.5"): dashboards may match on it.
function runtimeName(): string {
  const { name, version } = runtime();
  return `${name === "Node.js" ? "node" : name.toLowerCase()} ${version}`;
}
