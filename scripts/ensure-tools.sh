#!/usr/bin/env bash
# What the tests need from Debian besides Node and npm: PostgreSQL's server (scripts/ensure-postgres.sh);
# systemd's systemd-analyze, the judge of deploy/pigeon.service (test/binary/deploy.test.ts); qemu-user and
# the arm64 C library, to run the arm64 release binary (test/binary/release.test.ts); Prometheus's promtool,
# the judge of /metrics (test/binary/metrics.test.ts; Debian's prometheus package); swaks and python3, the
# sending mail servers of test/email/smtp.test.ts. Each is installed
# when missing and apt-get can (as root, or through sudo without a password); otherwise this says
# what to install and the tests that need it fail with the same advice.
set -u
bash "$(dirname "$0")/ensure-postgres.sh"

# shellcheck source=scripts/ensure-lib.sh
source "$(dirname "$0")/ensure-lib.sh"

ensure systemd-analyze systemd
ensure qemu-aarch64 qemu-user
ensure /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 libc6-arm64-cross
ensure promtool prometheus
# swaks, a sending mail server judging the email bridge's SMTP listener (test/email/smtp.test.ts);
# Python's smtplib, the other judge, comes with python3.
ensure swaks swaks
# swaks speaks TLS through Perl's Net::SSLeay (its STARTTLS and AUTH need it).
perl -MNet::SSLeay -MIO::Socket::SSL -e 1 >/dev/null 2>&1 || ensure /nonexistent/net-ssleay libnet-ssleay-perl libio-socket-ssl-perl
ensure python3 python3
# Python's aiosmtpd, the relay that takes the bridge's forwards (test/email/forward.test.ts).
ensure /usr/lib/python3/dist-packages/aiosmtpd python3-aiosmtpd
# Kannel's bearerbox and smsbox, the SMS gateway that judges the SMPP listener (test/smpp/kannel.test.ts).
ensure bearerbox kannel
# strace, which shows the order of the binary's own system calls: a write's flush to disk before
# its answer (test/binary/durable-answer.test.ts).
ensure strace strace
exit 0
