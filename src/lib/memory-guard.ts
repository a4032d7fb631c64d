// Keeps the server's resident size near a budget. The JavaScript engine sizes its heap by the
// machine's memory: on a machine with 24 GB it let garbage pile up until the process held 175–190 MB
// under a load of bulk sends, where a collection brings it back near 100 MB. A home server shares
// its memory with everything else, so the server asks for a full collection itself while its
// resident size is past the budget and its heap holds at least `slack` more than the last
// collection left: a large live set is not collected over and over for nothing. (The resident size
// itself falls only as the allocator gives pages back, a little after a collection, so it cannot
// tell what a collection would free; the heap can.) Measured in bench/NOTES.md.

import { heapSize } from "bun:jsc";

export interface MemoryGuardOptions {
  /** The resident size, in bytes, above which a collection is asked for. */
  budgetBytes: number;
  /** How much the heap must hold past what the last collection left before the next. */
  slackBytes: number;
  /** How often the size is read, in milliseconds. */
  everyMs: number;
  /** The process's resident size now, in bytes. */
  residentBytes: () => number;
  /** The JavaScript heap's size now, in bytes. */
  heapBytes: () => number;
  /** A full, synchronous collection. */
  collect: () => void;
}

export interface MemoryGuard {
  /** One reading: collects when over the budget and past the last collection's level; whether it did. */
  check(): boolean;
  /** Collections asked for so far. */
  readonly collections: number;
  stop(): void;
}

/** The guard's policy without its timer (`check` is what the timer calls), for tests and `startMemoryGuard`. */
export function memoryGuard(o: Omit<MemoryGuardOptions, "everyMs">): MemoryGuard {
  let floor = 0;
  let collections = 0;
  return {
    check() {
      if (o.residentBytes() <= o.budgetBytes || o.heapBytes() <= floor) return false;
      o.collect();
      collections++;
      floor = o.heapBytes() + o.slackBytes;
      return true;
    },
    get collections() {
      return collections;
    },
    stop() {},
  };
}

/** Reads the resident size every `everyMs` on a timer that does not keep the process alive. */
export function startMemoryGuard(o: MemoryGuardOptions): MemoryGuard {
  const guard = memoryGuard(o);
  const timer = setInterval(() => guard.check(), o.everyMs);
  timer.unref();
  return {
    check: () => guard.check(),
    get collections() {
      return guard.collections;
    },
    stop: () => clearInterval(timer),
  };
}

/** The server's guard: a 128 MB budget, 16 MB of slack, read every quarter second. */
export function startServerMemoryGuard(): MemoryGuard {
  return startMemoryGuard({
    budgetBytes: 128 * 1048576,
    slackBytes: 16 * 1048576,
    everyMs: 250,
    residentBytes: () => process.memoryUsage.rss(),
    heapBytes: () => heapSize(),
    collect: () => Bun.gc(true),
  });
}
