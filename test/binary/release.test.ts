// The release binaries `npm run build:release` writes (npm test builds them first): one for
// linux-x64 and one for linux-arm64, each the right machine's ELF, with SHA-256 sums that match;
// the x64 one runs here, and the arm64 one serves /health under qemu-aarch64 (Debian's qemu-user,
// with libc6-arm64-cross for its loader), as it would on a Raspberry Pi.
import { afterAll, describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { settle } from "../helpers/api";
import { collectOutput, tempDir } from "../helpers/binary";

const RELEASE = join(import.meta.dir, "../..", "dist", "release");
const ARM_LIBS = "/usr/aarch64-linux-gnu";
let arm: Subprocess | null = null;
afterAll(async () => {
  if (arm && arm.exitCode === null) {
    arm.kill("SIGKILL");
    await arm.exited;
  }
});

/** The ELF header's machine field: 62 is x86-64, 183 AArch64. */
function machineOf(file: string): number {
  const head = readFileSync(file).subarray(0, 20);
  expect(head.subarray(0, 4).toString("latin1")).toBe("\x7fELF");
  return head.readUInt16LE(18);
}

describe("release binaries", () => {
  test("both targets are there, each its machine's executable, and SHA256SUMS matches them", () => {
    expect(existsSync(RELEASE)).toBe(true);
    expect(machineOf(join(RELEASE, "pigeon-linux-x64"))).toBe(62);
    expect(machineOf(join(RELEASE, "pigeon-linux-arm64"))).toBe(183);
    const sums = readFileSync(join(RELEASE, "SHA256SUMS"), "utf8").trim().split("\n");
    expect(sums.map((line) => line.split(/\s+/)[1]).sort()).toEqual(["pigeon-linux-arm64", "pigeon-linux-x64"]);
    for (const line of sums) {
      const [sum, name] = line.split(/\s+/);
      expect(
        createHash("sha256")
          .update(readFileSync(join(RELEASE, name)))
          .digest("hex"),
      ).toBe(sum);
    }
    // sha256sum itself agrees.
    const check = Bun.spawnSync(["sha256sum", "-c", "SHA256SUMS"], { cwd: RELEASE, stdout: "pipe" });
    expect(check.exitCode).toBe(0);
  });

  test("the x64 binary runs here", () => {
    const r = Bun.spawnSync([join(RELEASE, "pigeon-linux-x64"), "--version"], { stdout: "pipe" });
    expect(r.exitCode).toBe(0);
    expect(r.stdout.toString()).toStartWith("pigeon ");
  });

  test("the arm64 binary serves /health under qemu-aarch64 and stops cleanly", async () => {
    expect(Bun.which("qemu-aarch64")).not.toBeNull();
    expect(existsSync(join(ARM_LIBS, "lib", "ld-linux-aarch64.so.1"))).toBe(true);
    arm = Bun.spawn(["qemu-aarch64", join(RELEASE, "pigeon-linux-arm64"), "serve"], {
      env: {
        PATH: process.env.PATH ?? "",
        QEMU_LD_PREFIX: ARM_LIBS,
        PIGEON_DATA_DIR: tempDir(),
        PIGEON_HOST: "127.0.0.1",
        PIGEON_PORT: "0",
      },
      stdout: "pipe",
      stderr: "pipe",
    });
    const output = collectOutput(arm);
    const listening = /listening on http:\/\/127\.0\.0\.1:(\d+)/;
    expect(await settle(() => listening.test(output()) || arm!.exitCode !== null, 90_000, 100), output()).toBe(true);
    const port = listening.exec(output())?.[1];
    expect(port, output()).toBeDefined();
    const res = await fetch(`http://127.0.0.1:${port}/health`);
    expect(res.status).toBe(200);
    expect((await res.json()).data).toMatchObject({ status: "ok", database: "ok" });
    arm.kill("SIGTERM");
    expect(await arm.exited).toBe(0);
  }, 120_000);
});
