// The server's memory guard (src/lib/memory-guard.ts): its policy on made-up readings, and on the
// real runtime that a collection it asks for frees what was garbage.
import { heapSize } from "bun:jsc";
import { describe, expect, test } from "bun:test";
import { memoryGuard, startMemoryGuard } from "../../src/lib/memory-guard";

const MB = 1048576;

/** A guard on readings the test sets; a collection leaves `live` in the heap. */
function readings(resident: number, heap: number, live = 40 * MB) {
  const r = { resident, heap, collected: 0 };
  const guard = memoryGuard({
    budgetBytes: 128 * MB,
    slackBytes: 16 * MB,
    residentBytes: () => r.resident,
    heapBytes: () => r.heap,
    collect: () => {
      r.collected++;
      r.heap = live;
    },
  });
  return { r, guard };
}

describe("the memory guard", () => {
  test("under the budget it asks for nothing, however full the heap", () => {
    const { r, guard } = readings(120 * MB, 100 * MB);
    expect(guard.check()).toBe(false);
    expect(r.collected).toBe(0);
  });

  test("over the budget it collects, then waits until the heap holds the slack past what the collection left", () => {
    const { r, guard } = readings(180 * MB, 90 * MB);
    expect(guard.check()).toBe(true);
    expect(r.collected).toBe(1);
    // Pages come back to the system later: the resident size is still over the budget, but the heap
    // has grown only 10 MB past the 40 MB the collection left, under the 16 MB of slack.
    r.heap = 50 * MB;
    expect(guard.check()).toBe(false);
    r.heap = 56 * MB;
    expect(guard.check()).toBe(false);
    r.heap = 57 * MB;
    expect(guard.check()).toBe(true);
    expect(guard.collections).toBe(2);
  });

  test("a live set larger than the budget is not collected over and over", () => {
    const { r, guard } = readings(400 * MB, 300 * MB, 290 * MB);
    expect(guard.check()).toBe(true);
    for (let i = 0; i < 10; i++) expect(guard.check()).toBe(false);
    expect(r.collected).toBe(1);
  });

  test("on the runtime, the collection it asks for frees the garbage in the heap", async () => {
    const guard = memoryGuard({
      budgetBytes: 0,
      slackBytes: 64 * MB,
      residentBytes: () => process.memoryUsage.rss(),
      heapBytes: () => heapSize(),
      collect: () => Bun.gc(true),
    });
    // Garbage the test can watch: a body-sized object held only weakly.
    let garbage: { items: { i: number; text: string }[] } | null = {
      items: Array.from({ length: 10_000 }, (_, i) => ({ i, text: `garbage ${i}` })),
    };
    const watched = new WeakRef(garbage);
    garbage = null;
    // A weak reference holds its target until the job that made it ends.
    await Bun.sleep(0);
    expect(guard.check()).toBe(true);
    expect(watched.deref()).toBeUndefined();
    // Nothing new in the heap since: no second collection.
    expect(guard.check()).toBe(false);
    expect(guard.collections).toBe(1);
  });

  test("started, it reads on a timer until stopped", async () => {
    let reads = 0;
    const guard = startMemoryGuard({
      budgetBytes: 128 * MB,
      slackBytes: 16 * MB,
      everyMs: 5,
      residentBytes: () => {
        reads++;
        return 0;
      },
      heapBytes: () => 0,
      collect: () => {},
    });
    await Bun.sleep(60);
    guard.stop();
    const after = reads;
    expect(after).toBeGreaterThan(0);
    await Bun.sleep(40);
    expect(reads).toBe(after);
  });
});
