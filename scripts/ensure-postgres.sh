#!/usr/bin/env bash
# The tests run the storage on PostgreSQL as well as SQLite, on a throwaway cluster they start
# themselves from Debian's postgresql package (test/helpers/postgres.ts). This installs the package
# when it is missing and apt-get can (as root, or through sudo without a password); otherwise it
# says what to install, and the PostgreSQL tests fail with the same advice.
set -u
if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || [ -n "${PIGEON_TEST_PG_BIN:-}" ]; then exit 0; fi
if command -v apt-get >/dev/null 2>&1; then
  install() { apt-get install -y --no-install-recommends postgresql >/dev/null 2>&1 || sudo -n apt-get install -y --no-install-recommends postgresql >/dev/null 2>&1; }
  update() { apt-get update >/dev/null 2>&1 || sudo -n apt-get update >/dev/null 2>&1; }
  echo "installing PostgreSQL for the tests (apt-get install postgresql)"
  install || { update && install; } && exit 0
fi
echo "PostgreSQL's server is not installed and could not be: install Debian's postgresql package (or set PIGEON_TEST_PG_BIN to its bin directory)"
exit 0
