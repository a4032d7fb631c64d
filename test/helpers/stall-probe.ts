// Whether a server's event loop is held by a request: its /health is polled from a process of its
// own, and at the same moments a bare Bun server in a third process, whose answers measure what
// the machine itself costs right then. A machine busy with other work (CI neighbours, the test's
// own load) slows both; a request holding the server's loop slows only the server. So a probe
// counts as a stall only when it takes the budget longer than the bare server's worst probe of the
// whole run: no fixed timing decides alone, and a real stall (hundreds of milliseconds of one
// request's work) still shows.
//
// The bare server makes each answer durable as Pigeon's commits are (a small write and an fsync
// on the same file system, on its loop): a disk whose fsync now and then takes hundreds of
// milliseconds holds every durable server's loop for that long, Pigeon's and the bare one's alike,
// and that is the disk's cost, not a request's.

export interface StallReport {
  /** Probes made, and those /health failed. */
  n: number;
  failed: number;
  /** The slowest /health probe, and the slowest bare one, in ms. */
  max: number;
  maxBare: number;
  /** /health probes that took longer than the budget plus maxBare. */
  stalls: number[];
  /** When each of those probes began and ended (epoch ms), to name what the server was doing then. */
  stallWindows: { from: number; to: number }[];
}

/**
 * Polls `url`/health every `intervalMs` from a process of its own. `ready` resolves once it probes
 * (starting it took hundreds of milliseconds on a busy machine: a test that began its load after a
 * fixed sleep was over before the first probe).
 */
export function startStallProbe(url: string, budgetMs: number, intervalMs = 20): { ready: Promise<void>; stop(): Promise<StallReport> } {
  const script = `
    // (The file is unlinked at once: its descriptor is all the writes need, and nothing is left behind.)
    const bareScript = "const fs = require('node:fs'); const file = require('node:path').join(require('node:os').tmpdir(), 'stall-probe-' + process.pid); const fd = fs.openSync(file, 'w'); fs.unlinkSync(file); const block = Buffer.alloc(4096); const s = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => { fs.writeSync(fd, block, 0, block.length, 0); fs.fsyncSync(fd); return new Response('ok'); } }); console.log(s.port);";
    const bare = Bun.spawn([process.execPath, "-e", bareScript], { stdout: "pipe" });
    const reader = bare.stdout.getReader();
    let first = "";
    while (!first.includes("\\n")) first += new TextDecoder().decode((await reader.read()).value);
    const bareUrl = "http://127.0.0.1:" + first.trim() + "/";
    const timed = async (u) => {
      const t0 = performance.now();
      const at = Date.now();
      try { const r = await fetch(u); await r.arrayBuffer(); return { ms: performance.now() - t0, ok: r.status === 200, at }; }
      catch { return { ms: performance.now() - t0, ok: false, at }; }
    };
    const probes = [];
    let stop = false;
    process.on("SIGTERM", () => { stop = true; });
    console.log("ready");
    while (!stop) {
      const [h, b] = await Promise.all([timed(${JSON.stringify(`${url}/health`)}), timed(bareUrl)]);
      probes.push([h.ms, b.ms, h.ok ? 1 : 0, h.at]);
      await Bun.sleep(${intervalMs});
    }
    bare.kill();
    console.log(JSON.stringify(probes));`;
  const proc = Bun.spawn([process.execPath, "-e", script], { stdout: "pipe", stderr: "inherit" });
  let markReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  // The whole output, read as it comes: "ready" first, the probes' JSON at the end.
  const output = (async () => {
    let text = "";
    const decoder = new TextDecoder();
    const reader = proc.stdout.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
      if (text.includes("ready\n")) markReady();
    }
    markReady();
    return text;
  })();
  return {
    ready,
    async stop() {
      proc.kill("SIGTERM");
      const probes = JSON.parse((await output).trim().split("\n").pop() || "[]") as [number, number, number, number][];
      const maxBare = Math.max(0, ...probes.map((p) => p[1]));
      return {
        n: probes.length,
        failed: probes.filter((p) => p[2] === 0).length,
        max: Math.max(0, ...probes.map((p) => p[0])),
        maxBare,
        stalls: probes.filter((p) => p[0] > budgetMs + maxBare).map((p) => Math.round(p[0])),
        stallWindows: probes.filter((p) => p[0] > budgetMs + maxBare).map((p) => ({ from: p[3], to: p[3] + p[0] })),
      };
    },
  };
}
