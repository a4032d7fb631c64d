#!/usr/bin/env bash
# What the tests need from Debian besides Node and npm: PostgreSQL's server (scripts/ensure-postgres.sh)
# and systemd's systemd-analyze, the judge of deploy/pigeon.service (test/deploy.test.ts). Each is
# installed when missing and apt-get can (as root, or through sudo without a password); otherwise
# this says what to install and the tests that need it fail with the same advice.
set -u
bash "$(dirname "$0")/ensure-postgres.sh"
if command -v systemd-analyze >/dev/null 2>&1; then exit 0; fi
if command -v apt-get >/dev/null 2>&1; then
  install() { apt-get install -y --no-install-recommends systemd >/dev/null 2>&1 || sudo -n apt-get install -y --no-install-recommends systemd >/dev/null 2>&1; }
  update() { apt-get update >/dev/null 2>&1 || sudo -n apt-get update >/dev/null 2>&1; }
  echo "installing systemd for the tests (apt-get install systemd: its systemd-analyze checks the unit file)"
  install || { update && install; } && exit 0
fi
echo "systemd-analyze is not installed and could not be: install Debian's systemd package"
exit 0
