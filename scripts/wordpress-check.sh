#!/usr/bin/env bash
# The WordPress plugin's PHP checks: `php -l` on every file, PHP 7.4 syntax, PHP_CodeSniffer
# (clients/wordpress/phpcs.xml.dist), the .pot against the sources, and the PHPUnit suite.
# One line per check; ends with "N passed, N failed" (PHPUnit's tests counted one by one), as
# .ci/run sums it. Needs php-cli, phpunit and php-codesniffer (scripts/ci-setup.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok    $*"; }
ko() { failed=$((failed + 1)); echo "FAIL  $*"; }

mapfile -t files < <(find clients/wordpress -name '*.php' | sort)
for f in "${files[@]}"; do
  if out=$(php -l "$f" 2>&1); then ok "php -l $f"; else ko "php -l $f: $out"; fi
done

while IFS= read -r line; do
  case "$line" in
    ok*) ok "PHP 7.4 syntax: ${line#ok   }" ;;
    *) ko "PHP 7.4 syntax: ${line#FAIL }" ;;
  esac
done < <(php clients/wordpress/tests/php74-check.php "${files[@]}")

if out=$(phpcs -q --standard=clients/wordpress/phpcs.xml.dist clients/wordpress/imgpress 2>&1); then
  ok "phpcs (clients/wordpress/phpcs.xml.dist)"
else
  echo "$out"
  ko "phpcs (clients/wordpress/phpcs.xml.dist)"
fi

if ./node_modules/.bin/bun scripts/wordpress-pot.ts --check >/dev/null 2>&1; then ok "languages/imgpress.pot is current"; else ko "languages/imgpress.pot is stale: run bun scripts/wordpress-pot.ts"; fi

junit=$(mktemp)
trap 'rm -f "$junit"' EXIT
phpunit -c clients/wordpress/phpunit.xml.dist --log-junit "$junit"
unit_status=$?
# The top <testsuite> element's counts.
read -r tests failures errors < <(php -r '$x = simplexml_load_file($argv[1]); $s = $x->testsuite; echo (int) $s["tests"], " ", (int) $s["failures"], " ", (int) $s["errors"], "\n";' "$junit" 2>/dev/null || echo "0 0 1")
unit_failed=$((failures + errors))
if [ "$unit_status" -ne 0 ] && [ "$unit_failed" -eq 0 ]; then unit_failed=1; fi
passed=$((passed + tests - failures - errors))
failed=$((failed + unit_failed))
echo "phpunit: $((tests - failures - errors)) passed, $unit_failed failed"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
