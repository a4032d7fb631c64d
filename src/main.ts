#!/usr/bin/env bun
// The `pigeon` command: serve (the default) and the operator's sub-commands.
import { runCli } from "./cli/commands";

// Everything Pigeon creates (database, WAL, key, backups) is for its owner alone.
process.umask(0o077);

const code = await runCli(process.argv.slice(2));
if (code !== null) process.exit(code);
