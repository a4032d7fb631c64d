#!/usr/bin/env bun
// The `pigeon` command: serve (the default) and the operator's sub-commands.
import { runCli } from "./cli/commands";

const code = await runCli(process.argv.slice(2));
if (code !== null) process.exit(code);
