#!/usr/bin/env bash
# What `npm run bench` needs from Debian besides Node and npm, installed when missing and apt-get can
# (as root, or through sudo without a password): wrk, the load generator; Kannel's bearerbox and
# smsbox with kannel-extras' fakesmsc, the peer it is measured beside; PostgreSQL's server for the
# PostgreSQL part (scripts/ensure-postgres.sh). The bench says what it skipped when one is missing.
set -u
bash "$(dirname "$0")/ensure-postgres.sh"
# shellcheck source=scripts/ensure-lib.sh
source "$(dirname "$0")/ensure-lib.sh"
ensure wrk wrk
ensure bearerbox kannel
ensure /usr/lib/kannel/test/fakesmsc kannel-extras
exit 0
