// A full disk, for real, against the compiled binary: its data directory on a small tmpfs of its
// own (mounted in a mount namespace of the server's, so nothing outlives it), filled by a file
// beside the database, then freed. Writes fail with 507 storage_full while it is full, nothing is
// half-stored, and /health reports the state — and recovers once the disk takes writes again,
// whether a send succeeds or nothing is written at all (a server drained by its load balancer).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { closeSync, openSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { waitFor } from "../helpers/api";
import { isolatedBinary, startServer, tempDir, type Credentials, type RunningServer } from "../helpers/binary";
import { RECIPIENT } from "../helpers/numbers";

// unshare -Urm: a user and mount namespace in which this user may mount a tmpfs (root or not).
const canMount =
  Bun.spawnSync(["unshare", "-Urm", "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /mnt"], { stderr: "ignore" }).exitCode === 0;
if (!canMount) console.warn("disk-full: cannot mount a tmpfs in a namespace here (unshare -Urm); skipping");

describe.skipIf(!canMount)("a full disk under the binary", () => {
  const dataDir = tempDir();
  let server: RunningServer;
  let key: Credentials;
  let filler: string;

  beforeAll(async () => {
    // The data directory is the mount point: the database and the filler share 16 MB.
    const mount = ["unshare", "-Urm", "sh", "-c", 'mount -t tmpfs -o size=16m,mode=0700 tmpfs "$0" && exec "$@"', dataDir];
    server = await startServer(isolatedBinary(), { PIGEON_DATA_DIR: dataDir }, 15_000, mount);
    key = server.initialKey!;
    // The tmpfs is seen through the server's own root (its mount namespace), not at dataDir here.
    filler = join(`/proc/${server.proc.pid}/root`, dataDir, "filler");
    const pairing = (await server.api("/v1/api/device/pairing", key)).body.data;
    const reg = await server.fetch("/mobile/v1/device", {
      method: "POST",
      headers: { authorization: `Bearer ${pairing.pairing_token}`, "content-type": "application/json", "user-agent": "SMS Gateway/1.68.0" },
      body: JSON.stringify({ name: "disk/phone" }),
    });
    expect(reg.status).toBe(201);
  });

  afterAll(async () => {
    await server?.stop("SIGKILL");
  });

  /** Fills the file system to the last byte. */
  function fill() {
    const fd = openSync(filler, "a");
    const chunk = new Uint8Array(64 * 1024);
    try {
      for (let size = chunk.length; size >= 1; ) {
        try {
          writeSync(fd, chunk, 0, size);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== "ENOSPC") throw error;
          size = Math.floor(size / 2);
        }
      }
    } finally {
      closeSync(fd);
    }
  }

  const send = (i: number) =>
    server.api("/v1/api/sms/send", key, { recipient_contact: RECIPIENT, message: `Order ${i} ${"x".repeat(600)}` });
  const health = async () => {
    const r = await server.fetch("/health");
    return { status: r.status, data: ((await r.json()) as { data: Record<string, unknown> }).data };
  };
  const count = async () => (await server.api("/v1/api/notification/list?limit=1", key)).body.data.pagination.total as number;

  /** Sends until the disk refuses one; the refusal's answer. */
  async function sendUntilFull() {
    for (let i = 0; i < 2000; i++) {
      const r = await send(i);
      if (r.status !== 200) return r;
    }
    throw new Error("the disk never filled");
  }

  test("full: 507 storage_full with nothing stored, /health 507 for as long as it stays full", async () => {
    expect((await health()).status).toBe(200);
    fill();
    const refused = await sendUntilFull();
    const stored = await count();
    expect(refused.status).toBe(507);
    // Nothing half-stored: a refused send leaves no row, the next refusal neither.
    expect((await send(0)).status).toBe(507);
    expect(await count()).toBe(stored);
    expect(refused.body).toMatchObject({ status_id: 507, data: { error_code: "storage_full" } });
    const h = await health();
    expect(h).toMatchObject({ status: 507, data: { error_code: "storage_full", database: "full" } });
    expect(typeof h.data.last_full_at).toBe("string");
    // Past the moment /health starts checking for itself, the disk is still full: still 507.
    await Bun.sleep(6_000);
    expect((await health()).status).toBe(507);
  }, 30_000);

  test("freed with nothing written: /health checks for itself and comes back to 200, the failure kept as history", async () => {
    const before = (await health()).data.last_full_at;
    rmSync(filler);
    // Nothing is sent: as a load balancer that took the server out of rotation would have it.
    const h = await waitFor(
      "health back to 200",
      async () => {
        const r = await health();
        return r.status === 200 ? r : null;
      },
      { timeoutMs: 15_000, intervalMs: 250 },
    );
    expect(h.data).toMatchObject({ status: "ok", database: "ok" });
    expect(h.data.last_full_at).toBe(before);
    const sent = await send(1);
    expect(sent.status).toBe(200);
  }, 30_000);

  test("full again, then freed: the first send that succeeds brings /health back at once", async () => {
    fill();
    expect((await sendUntilFull()).status).toBe(507);
    const stored = await count();
    expect((await health()).status).toBe(507);
    rmSync(filler);
    expect((await send(2)).status).toBe(200);
    expect(await count()).toBe(stored + 1);
    expect(await health()).toMatchObject({ status: 200, data: { database: "ok" } });
  }, 30_000);
});
