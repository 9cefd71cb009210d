#!/bin/sh
# Installs, with apt-get, what CI needs on a fresh Debian/Ubuntu machine to smoke-test the
# linux-arm64 binary under qemu-user (scripts/smoke.ts), the browser of the dashboard tests,
# PostgreSQL, nginx and Caddy for the shared-database, multi-instance and reverse-proxy tests
# (installed without starting their services), the tools that build and test the release artifacts
# (scripts/release.ts, scripts/release-test.ts), plus a package of real JPEG photos for the conversion checks. Idempotent: packages already installed are skipped without
# touching the network. Prints one line per step.
#
#   sh scripts/ci-setup.sh            # as root, or as a user with passwordless sudo
#   IMGPRESS_CI_PHOTOS=0 sh scripts/ci-setup.sh   # skip the 46 MB photo package
#
# The smoke test runs the arm64 binary as
#   qemu-aarch64-static -L /usr/aarch64-linux-gnu dist/imgpress-linux-arm64
# so no binfmt_misc registration is needed (containers often cannot do it anyway).
set -eu

# qemu and the arm64 libraries run dist/imgpress-linux-arm64 on an x86-64 machine; PHP runs the
# WordPress-style client test (test/clients/convert.php); curl and openssl run the docs' recipes
# (test/docs/recipes.test.ts); prometheus brings promtool, which checks the scraped metrics and
# docs/prometheus/imgpress-rules.yml.
REQUIRED="qemu-user-static libc6-arm64-cross libstdc++6-arm64-cross libgcc-s1-arm64-cross php-cli php-curl curl openssl prometheus"
# Debian's chromium runs the browser tests (test/e2e/*.browser.test.ts) and `npm run screenshots`
# through playwright-core, which downloads no browser of its own. (On Ubuntu the package is a snap
# stub: install a real chromium and set CHROMIUM_PATH.)
BROWSER="chromium"
# The release: dpkg-deb (in dpkg) builds the .deb, lintian checks it; systemd brings systemd-analyze, which
# verifies the unit (nothing here needs systemd as PID 1); podman with Debian's runc (crun cannot
# run in these sandboxes) runs the image, skopeo inspects its arm64 half and copies it out.
RELEASE="lintian systemd podman runc skopeo"
# PostgreSQL runs the shared-database tests (test/support/postgres.ts starts a private cluster
# in a temp folder from its server binaries); nginx is the TLS load balancer in front of the
# instances of the multi-instance test; nginx and Caddy run the reverse-proxy recipes of
# deploy/proxy/ (test/e2e/proxy.e2e.test.ts). None runs as a system service (see policy-rc.d below).
SERVERS="postgresql nginx caddy"
# The WordPress plugin's tests: Debian's WordPress (6.1) with a classic theme, MariaDB started by
# test/support/wordpress.ts in a temp folder, PHP's MySQL and GD modules, php-fpm (for a site
# served by nginx; the tests use PHP's built-in server), PHPUnit and PHP_CodeSniffer for
# scripts/wordpress-check.sh, zip for dist/imgpress-wordpress.zip. wordpress pulls in apache2:
# the policy-rc.d below keeps it (and mariadb) from starting.
WORDPRESS="wordpress wordpress-theme-twentytwentyone mariadb-server php-fpm php-mysql php-gd phpunit php-codesniffer zip unzip"
# Real photos in /usr/share/backgrounds; optional, scripts/smoke.ts generates one without it.
OPTIONAL="mate-backgrounds"
# While installing, a policy-rc.d that exits 101 keeps the packages' services (postgresql, nginx,
# caddy, prometheus, apache2, mariadb, php-fpm) from starting: the tests start their own, and a system nginx would hold port 80.
POLICY=/usr/sbin/policy-rc.d

say() { echo "ci-setup: $*"; }

if [ "$(id -u)" -eq 0 ]; then
  SUDO=""
elif command -v sudo >/dev/null 2>&1; then
  SUDO="sudo -n"
else
  SUDO="__none__"
fi

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

missing() {
  out=""
  for p in "$@"; do installed "$p" || out="$out $p"; done
  echo "$out"
}

if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-query >/dev/null 2>&1; then
  say "FAILED: apt-get/dpkg-query not found; this script supports Debian and Ubuntu only"
  exit 1
fi

case "$(uname -m)" in
  aarch64 | arm64)
    say "host is arm64: qemu and the arm64 cross libraries are not needed, skipped"
    REQUIRED="php-cli php-curl curl openssl prometheus"
    ;;
esac

want_required=$(missing $REQUIRED $BROWSER $SERVERS $WORDPRESS $RELEASE)
want_optional=""
if [ "${IMGPRESS_CI_PHOTOS:-1}" != "0" ]; then
  want_optional=$(missing $OPTIONAL)
else
  say "photos: skipped (IMGPRESS_CI_PHOTOS=0)"
fi

if [ -z "$want_required$want_optional" ]; then
  say "already installed, nothing to do"
else
  if [ "$SUDO" = "__none__" ]; then
    say "FAILED: need root (or passwordless sudo) to install:$want_required$want_optional"
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  if [ ! -e "$POLICY" ]; then
    say "services: not started during the install (temporary $POLICY)"
    trap '$SUDO rm -f "$POLICY"' EXIT
    $SUDO sh -c "printf '#!/bin/sh\nexit 101\n' > $POLICY && chmod 0755 $POLICY"
    own_policy=1
  fi
  say "apt-get update"
  $SUDO apt-get update -qq >/dev/null
  if [ -n "$want_required" ]; then
    say "installing:$want_required"
    # shellcheck disable=SC2086
    $SUDO apt-get install -y -qq --no-install-recommends $want_required >/dev/null
  fi
  if [ -n "$want_optional" ]; then
    say "installing (optional):$want_optional"
    # shellcheck disable=SC2086
    if ! $SUDO apt-get install -y -qq --no-install-recommends $want_optional >/dev/null; then
      say "warning: could not install$want_optional; the smoke test will generate its photo instead"
    fi
  fi
  if [ -n "${own_policy:-}" ]; then
    $SUDO rm -f "$POLICY" && trap - EXIT
    say "services: temporary $POLICY removed"
  fi
fi

# Check that what was installed actually works, so a broken setup fails here and not
# halfway through the smoke test.
if [ -n "$REQUIRED" ]; then
  if ! qemu-aarch64-static -version >/dev/null 2>&1; then
    say "FAILED: qemu-aarch64-static does not run"
    exit 1
  fi
  if [ ! -e /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 ] || [ ! -e /usr/aarch64-linux-gnu/lib/libstdc++.so.6 ]; then
    say "FAILED: arm64 loader or libstdc++ missing under /usr/aarch64-linux-gnu/lib"
    exit 1
  fi
  say "ok: $(qemu-aarch64-static -version | head -n 1), arm64 libraries in /usr/aarch64-linux-gnu"
fi
if ! "${CHROMIUM_PATH:-/usr/bin/chromium}" --version >/dev/null 2>&1; then
  say "FAILED: ${CHROMIUM_PATH:-/usr/bin/chromium} does not run"
  exit 1
fi
say "ok: $("${CHROMIUM_PATH:-/usr/bin/chromium}" --version 2>/dev/null | head -n 1)"
pg_bin=$(pg_config --bindir 2>/dev/null || true)
if [ -z "$pg_bin" ] || [ ! -x "$pg_bin/initdb" ]; then
  pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
fi
if [ -z "$pg_bin" ] || ! "$pg_bin/postgres" --version >/dev/null 2>&1; then
  say "FAILED: PostgreSQL server binaries (initdb, pg_ctl, postgres) not found under /usr/lib/postgresql/*/bin"
  exit 1
fi
say "ok: $("$pg_bin/postgres" --version) in $pg_bin"
if ! /usr/sbin/nginx -v >/dev/null 2>&1; then
  say "FAILED: /usr/sbin/nginx does not run"
  exit 1
fi
say "ok: $(/usr/sbin/nginx -v 2>&1)"
if ! /usr/bin/caddy version >/dev/null 2>&1; then
  say "FAILED: /usr/bin/caddy does not run"
  exit 1
fi
say "ok: caddy $(/usr/bin/caddy version 2>&1 | head -n 1)"
for tool in dpkg-deb lintian systemd-analyze podman runc skopeo; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    say "FAILED: $tool not found (release tools)"
    exit 1
  fi
done
say "ok: release tools: $(podman --version), $(runc --version | head -n 1), $(skopeo --version), lintian $(lintian --version | cut -d' ' -f2)"
if [ ! -e /usr/share/wordpress/wp-load.php ] || [ ! -x /usr/sbin/mariadbd ] || ! phpunit --version >/dev/null 2>&1 || ! phpcs --version >/dev/null 2>&1; then
  say "FAILED: WordPress, MariaDB, phpunit or phpcs missing (packages: $WORDPRESS)"
  exit 1
fi
say "ok: WordPress $(sed -n "s/^\$wp_version = '\(.*\)';/\1/p" /usr/share/wordpress/wp-includes/version.php), MariaDB $(/usr/sbin/mariadbd --version | sed -n "s/.*Ver \([^ -]*\).*/\1/p"), $(phpunit --version | head -n 1)"
if [ -d /usr/share/backgrounds ]; then
  say "ok: photos in /usr/share/backgrounds"
fi
