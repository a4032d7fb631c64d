// deploy/pigeon.service, judged by systemd's own tools (Debian's systemd package; scripts/ensure-tools.sh
// installs it): `systemd-analyze verify` accepts it, `systemd-analyze security` rates its exposure
// 2.0 or lower, and it keeps the fixed contracts (its own user, StateDirectory=pigeon as the data
// directory, ProtectSystem=strict, NoNewPrivileges). No systemd runs here to start it.
import { describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "../helpers/binary";

const ROOT = join(import.meta.dir, "../..");
const unit = readFileSync(join(ROOT, "deploy", "pigeon.service"), "utf8");

/** The unit with ExecStart pointing at the built binary (verify checks the program exists). */
function unitHere(): string {
  const path = join(tempDir(), "pigeon.service");
  writeFileSync(path, unit.replaceAll("/usr/local/bin/pigeon", join(ROOT, "dist", "pigeon")));
  return path;
}

function analyze(args: string[]) {
  const r = Bun.spawnSync(["systemd-analyze", ...args], { stdout: "pipe", stderr: "pipe" });
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
}

/** The settings of the [Service] section, each name with all its values. */
function service(): Map<string, string[]> {
  const section = unit.slice(unit.indexOf("[Service]"), unit.indexOf("[Install]"));
  const settings = new Map<string, string[]>();
  for (const line of section.split("\n")) {
    const m = /^([A-Za-z]+)=(.*)$/.exec(line.trim());
    if (m) settings.set(m[1], [...(settings.get(m[1]) ?? []), m[2]]);
  }
  return settings;
}

describe("deploy/pigeon.service", () => {
  test("systemd-analyze verify accepts it", () => {
    const r = analyze(["verify", unitHere()]);
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
  });

  test("systemd-analyze security rates its exposure 2.0 or lower", () => {
    const r = analyze(["security", "--offline=true", "--no-pager", unitHere()]);
    expect(r.code).toBe(0);
    const level = /Overall exposure level for pigeon\.service: ([\d.]+)/.exec(r.out);
    expect(level).not.toBeNull();
    expect(Number(level![1])).toBeLessThanOrEqual(2.0);
  });

  test("its own user, its state directory as the data directory, hardened, stopped as Pigeon stops", () => {
    const s = service();
    expect(s.get("DynamicUser")).toEqual(["yes"]);
    expect(s.get("StateDirectory")).toEqual(["pigeon"]);
    expect(s.get("Environment")).toContain("PIGEON_DATA_DIR=/var/lib/pigeon");
    expect(s.get("ExecStart")).toEqual(["/usr/local/bin/pigeon serve"]);
    expect(s.get("ProtectSystem")).toEqual(["strict"]);
    expect(s.get("NoNewPrivileges")).toEqual(["yes"]);
    expect(s.get("KillSignal")).toEqual(["SIGTERM"]);
    // A configuration error (exit 2) is not restarted in a loop.
    expect(s.get("RestartPreventExitStatus")).toEqual(["2"]);
  });
});
