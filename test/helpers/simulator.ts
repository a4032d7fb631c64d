// `pigeon simulate-phone` run by the compiled binary, its output (stdout and stderr together, so a
// failure to start says why) collected for the test to read, and a wait for it to be paired.
import type { Subprocess } from "bun";
import { waitFor } from "./api";
import { collectOutput } from "./binary";

export interface RunningPhone {
  proc: Subprocess;
  /** Everything the simulator has printed so far. */
  output: () => string;
}

/** Starts the simulator with `args` (after `simulate-phone`). */
export function spawnSimulator(bin: string, args: string[]): RunningPhone {
  const proc = Bun.spawn([bin, "simulate-phone", ...args], { env: { PATH: process.env.PATH ?? "" }, stdout: "pipe", stderr: "pipe" });
  return { proc, output: collectOutput(proc) };
}

/** Starts the simulator and waits until it prints `ready` (by default: its event stream is open). */
export async function startSimulator(
  bin: string,
  args: string[],
  ready = "events stream open",
  what = "the phone to pair",
): Promise<RunningPhone> {
  const phone = spawnSimulator(bin, args);
  await waitFor(what, () => phone.output().includes(ready) || phone.proc.exitCode !== null, { detail: phone.output });
  if (!phone.output().includes(ready)) throw new Error(`the simulator exited (${phone.proc.exitCode}): ${phone.output()}`);
  return phone;
}
