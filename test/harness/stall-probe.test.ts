// The judge the fuzzer and the hostile-body tests use for "no request holds the event loop"
// (helpers/stall-probe.ts) must see a real stall: a server that holds its loop for a second on one
// route is caught, and the same server left alone is not.
import { describe, expect, test } from "bun:test";
import { startStallProbe } from "../helpers/stall-probe";

async function readLine(proc: { stdout: ReadableStream<Uint8Array> | number | undefined }) {
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
  let text = "";
  while (!text.includes("\n")) text += new TextDecoder().decode((await reader.read()).value);
  reader.releaseLock();
  return text;
}

describe("the stall probe", () => {
  test("a request that holds the loop for a second is a stall; the same server left alone has none", async () => {
    const server = Bun.spawn(
      [
        process.execPath,
        "-e",
        `const s = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch(req) {
      if (new URL(req.url).pathname === "/block") { const until = Date.now() + 1000; while (Date.now() < until); }
      return new Response("ok");
    } }); console.log(s.port);`,
      ],
      { stdout: "pipe" },
    );
    try {
      const url = `http://127.0.0.1:${(await readLine(server)).trim()}`;
      const quiet = startStallProbe(url, 100);
      await Bun.sleep(1000);
      const calm = await quiet.stop();
      expect(calm.n).toBeGreaterThan(5);
      expect(calm.stalls).toEqual([]);

      const probe = startStallProbe(url, 100);
      await Bun.sleep(500);
      await fetch(`${url}/block`);
      await Bun.sleep(300);
      const held = await probe.stop();
      expect(held.failed).toBe(0);
      expect(held.stalls.length).toBeGreaterThan(0);
      expect(Math.max(...held.stalls)).toBeGreaterThan(500);
    } finally {
      server.kill();
    }
  }, 20_000);
});
