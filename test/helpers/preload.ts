// Loaded before every test file (bunfig.toml): after the last test of the run, the temp folders
// the helpers made (binary copies, data directories) are removed. Bun runs a preload's afterAll once,
// at the very end, and does not fire process "exit" handlers under \`bun test\`.
import { afterAll } from "bun:test";
import { rmSync } from "node:fs";
import { tempDirsToRemove } from "./temp-dirs";

afterAll(() => {
  for (const dir of tempDirsToRemove.splice(0)) rmSync(dir, { recursive: true, force: true });
});
