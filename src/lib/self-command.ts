// Running this program's own CLI as a child process: the compiled binary runs itself; from source
// (development, the in-process tests), Bun runs src/main.ts.
import { join } from "node:path";

/** The command line that starts this program (before its arguments). */
function selfCommand(): string[] {
  // A compiled binary's entry point lives in Bun's embedded file system.
  if (Bun.main.startsWith("/$bunfs/")) return [process.execPath];
  return [process.execPath, join(import.meta.dir, "..", "main.ts")];
}

/** Runs `pigeon <args>` with this process's environment; resolves with its output, throws with its error line. */
export async function runSelf(args: string[]): Promise<string> {
  const proc = Bun.spawn([...selfCommand(), ...args], { env: process.env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  if (code !== 0) throw new Error(`pigeon ${args[0]} exited with ${code}: ${err.trim().split("\n")[0] || "(no message)"}`);
  return out;
}
