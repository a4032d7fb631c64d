// SQLite's commit and its flush to disk (src/db/sqlite-storage.ts): on a WAL file the commit does
// not wait for the disk, and the storage flushes the WAL itself, off the thread. A unit of work is
// answered, and its after-commit steps run, only once a flush that began after its commit has
// ended; the next batch runs while that flush is under way and shares the flush after it; a flush
// that fails fails every unit it was owed to. The flush is held by hand here, so each of these
// orders is observed, not timed.
import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSqliteStorage } from "../../src/db/sqlite-storage";

/** A flush that ends only when the test says so, counting how many began. */
function heldFlush() {
  const pending: { resolve: () => void; reject: (error: unknown) => void }[] = [];
  return {
    flush: () =>
      new Promise<void>((resolve, reject) => {
        pending.push({ resolve, reject });
      }),
    begun: () => pending.length,
    end: (at: number) => pending[at]!.resolve(),
    fail: (at: number, error: unknown) => pending[at]!.reject(error),
  };
}

function fresh(flush?: () => Promise<void>) {
  const sqlite = new Database(":memory:", { strict: true });
  sqlite.run("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)");
  let commits = 0;
  const storage = createSqliteStorage(sqlite, { flush, onCommit: () => commits++ });
  return { sqlite, storage, commits: () => commits };
}

/** Lets every callback queued so far run (the batch runs on the next turn). */
const turns = async (n = 3) => {
  for (let i = 0; i < n; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};

describe("SQLite's commit waits for its flush", () => {
  test("a unit is answered, and its after-commit step runs, only after the flush begun after its commit ends", async () => {
    const held = heldFlush();
    const { sqlite, storage, commits } = fresh(held.flush);
    let answered = false;
    let followed = false;
    const unit = storage
      .transaction(async () => {
        await storage.run("INSERT INTO t (v) VALUES ('a')");
        storage.afterCommit(() => {
          followed = true;
        });
        return "done";
      })
      .then((value) => {
        answered = true;
        return value;
      });
    await turns();
    // Committed (another reader of the connection sees it) and flushing, but not answered.
    expect(sqlite.query("SELECT count(*) AS n FROM t").get()).toEqual({ n: 1 });
    expect(held.begun()).toBe(1);
    expect(answered).toBe(false);
    expect(followed).toBe(false);
    expect(commits()).toBe(0);
    held.end(0);
    expect(await unit).toBe("done");
    expect(followed).toBe(true);
    expect(commits()).toBe(1);
  });

  test("the next batch runs during a flush and waits for a flush of its own, which begins only after", async () => {
    const held = heldFlush();
    const { sqlite, storage } = fresh(held.flush);
    const order: string[] = [];
    const first = storage.run("INSERT INTO t (v) VALUES ('first')").then(() => order.push("first"));
    await turns();
    expect(held.begun()).toBe(1);
    const second = storage.run("INSERT INTO t (v) VALUES ('second')").then(() => order.push("second"));
    const third = storage.run("INSERT INTO t (v) VALUES ('third')").then(() => order.push("third"));
    await turns();
    // Both later writes committed while the first flush was held, and no second flush began
    // beside it: one flush of a file is in flight at a time.
    expect(sqlite.query("SELECT v FROM t ORDER BY id").all()).toEqual([{ v: "first" }, { v: "second" }, { v: "third" }]);
    expect(held.begun()).toBe(1);
    const fourth = storage.run("INSERT INTO t (v) VALUES ('fourth')").then(() => order.push("fourth"));
    await turns();
    expect(held.begun()).toBe(1);
    held.end(0);
    await first;
    await turns();
    // The commits made during the first flush share the one that began after it.
    expect(held.begun()).toBe(2);
    expect(order).toEqual(["first"]);
    held.end(1);
    await Promise.all([second, third, fourth]);
    expect(order).toEqual(["first", "second", "third", "fourth"]);
    expect(held.begun()).toBe(2);
  });

  test("a flush that fails fails the units owed to it, runs none of their after-commit steps, and the next flush serves the next batch", async () => {
    const held = heldFlush();
    const { storage, commits } = fresh(held.flush);
    let followed = false;
    const unit = storage.transaction(async () => {
      await storage.run("INSERT INTO t (v) VALUES ('a')");
      storage.afterCommit(() => {
        followed = true;
      });
    });
    await turns();
    held.fail(0, new Error("EIO: the disk refused"));
    await expect(unit).rejects.toThrow("EIO");
    expect(followed).toBe(false);
    expect(commits()).toBe(0);
    const next = storage.run("INSERT INTO t (v) VALUES ('b')");
    await turns();
    expect(held.begun()).toBe(2);
    held.end(1);
    await next;
    expect(commits()).toBe(1);
  });

  test("a batch that wrote nothing is answered without a flush", async () => {
    const held = heldFlush();
    const { storage } = fresh(held.flush);
    expect(await storage.transaction(async () => storage.all("SELECT v FROM t"))).toEqual([]);
    expect(await storage.run("UPDATE t SET v = 'x' WHERE id = 99")).toEqual({ changes: 0 });
    expect(held.begun()).toBe(0);
  });
});

describe("on a WAL file by default", () => {
  test("the connection commits without waiting for the disk, and the WAL file is flushed before each answer", async () => {
    const dir = mkdtempSync(join(tmpdir(), "pigeon-flush-"));
    try {
      const sqlite = new Database(join(dir, "x.db"), { create: true, strict: true });
      sqlite.run("PRAGMA journal_mode = WAL");
      sqlite.run("PRAGMA synchronous = FULL");
      sqlite.run("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)");
      const storage = createSqliteStorage(sqlite);
      // 1 = NORMAL: the storage took over the flush.
      expect(sqlite.query("PRAGMA synchronous").get()).toEqual({ synchronous: 1 });
      await Promise.all(Array.from({ length: 20 }, (_, i) => storage.run("INSERT INTO t (v) VALUES (?)", [`v${i}`])));
      expect(await storage.get("SELECT count(*) AS n FROM t")).toEqual({ n: 20 });
      sqlite.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a database not in WAL mode keeps SQLite's own commit", () => {
    const sqlite = new Database(":memory:", { strict: true });
    sqlite.run("PRAGMA synchronous = FULL");
    createSqliteStorage(sqlite);
    expect(sqlite.query("PRAGMA synchronous").get()).toEqual({ synchronous: 2 });
  });
});
