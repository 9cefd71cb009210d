// compose.yaml of the release: the image loaded from the OCI archive, a named volume, the port,
// the settings file, the health check, and a stop grace period that lets a drain finish.
import { settings } from "../../src/core/config.ts";
import type { Release } from "./context.ts";

// Beyond the drain (IMGPRESS_DRAIN_DELAY_S + IMGPRESS_SHUTDOWN_TIMEOUT_S): flushing and the
// database checkpoint after it, as the systemd unit's TimeoutStopSec leaves room for.
const MARGIN_S = 15;

/** Seconds a stop may take with the default settings, plus the margin (45 s). */
export function stopGraceS(): number {
  const value = (env: string) => Number(settings.find((s) => s.env === env)?.fallback?.({}));
  return value("IMGPRESS_DRAIN_DELAY_S") + value("IMGPRESS_SHUTDOWN_TIMEOUT_S") + MARGIN_S;
}

/** The image's name once loaded (`docker load` / `podman load`). */
export const imageName = (r: Release) => `imgpress:${r.version}`;

/** The file's text. */
export function compose(r: Release): string {
  return `# imgpress ${r.version}: docker compose up -d   (or: podman compose up -d)
# First load the image: docker load -i imgpress-${r.version}-oci.tar  (podman load -i … alike)
# and copy imgpress.env.example to imgpress.env (set IMGPRESS_SMTP_URL, IMGPRESS_MAIL_FROM,
# IMGPRESS_TLS_NAMES there). Clients trust the certificate in the volume: docker compose cp
# imgpress:/data/tls/cert.pem . The data volume holds the database and the master key: back it up.
services:
  imgpress:
    image: ${imageName(r)}
    restart: unless-stopped
    ports:
      - "8443:8443"
    env_file: imgpress.env
    volumes:
      - imgpress-data:/data
      - imgpress-cache:/cache
    healthcheck:
      test: ["CMD", "/usr/bin/imgpress", "health"]
      interval: 30s
      timeout: 10s
      start_period: 30s
      retries: 3
    # Accepted uploads and conversions finish on stop: IMGPRESS_DRAIN_DELAY_S +
    # IMGPRESS_SHUTDOWN_TIMEOUT_S + ${MARGIN_S} s. Raise it with either setting.
    stop_grace_period: ${stopGraceS()}s

volumes:
  imgpress-data:
  imgpress-cache:
`;
}
