// The unit of work on SQLite (src/db/sqlite-storage.ts): two async transactions interleaved are
// isolated from each other and from readers, a failing one is rolled back alone, nested ones are
// savepoints, what follows a commit follows only a commit, units of one turn share one commit,
// and an acknowledged write is on disk. The same scenario run through bun:sqlite's own
// `transaction(async …)` breaks isolation: that is what the seam is for.
import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSqliteStorage, readsOnly } from "../src/db/sqlite-storage";
import { indexHint, jsonField, type Storage } from "../src/db/storage";

function fresh(path = ":memory:") {
  const sqlite = new Database(path, { create: true, strict: true });
  sqlite.run("PRAGMA journal_mode = WAL");
  sqlite.run("CREATE TABLE t (v TEXT NOT NULL)");
  let commits = 0;
  const storage = createSqliteStorage(sqlite, { onCommit: () => commits++ });
  return { sqlite, storage, commits: () => commits };
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));
const values = (storage: Storage) => storage.all<{ v: string }>("SELECT v FROM t ORDER BY rowid").then((rows) => rows.map((r) => r.v));

/**
 * Two transactions at once: A writes a1, waits a turn, writes a2; B writes b1, waits, then fails.
 * A reader polls the whole time. Returns everything the reader saw and the final rows.
 */
async function interleave(
  transaction: <T>(fn: () => Promise<T>) => Promise<T>,
  write: (v: string) => Promise<unknown>,
  read: () => Promise<string[]>,
) {
  const seen: string[][] = [];
  let done = false;
  /** Reads begun while the transactions were still under way. */
  let readsDuring = 0;
  const reader = (async () => {
    while (!done) {
      readsDuring++;
      seen.push(await read());
      await tick();
    }
  })();
  const a = transaction(async () => {
    await write("a1");
    await tick();
    await tick();
    await write("a2");
  });
  const b = transaction(async () => {
    await write("b1");
    await tick();
    throw new Error("b fails");
  });
  const outcomes = await Promise.allSettled([a, b]);
  done = true;
  await reader;
  return { seen, readsDuring, outcomes: outcomes.map((o) => o.status), final: await read() };
}

describe("the unit of work on SQLite", () => {
  test("interleaved async transactions: a reader never sees half of one, and the failing one is rolled back alone", async () => {
    const { storage } = fresh();
    const r = await interleave(
      (fn) => storage.transaction(fn),
      (v) => storage.run("INSERT INTO t (v) VALUES (?)", [v]),
      () => values(storage),
    );
    expect(r.outcomes).toEqual(["fulfilled", "rejected"]);
    expect(r.final).toEqual(["a1", "a2"]);
    expect(r.readsDuring).toBeGreaterThan(1);
    for (const rows of r.seen) expect(rows.includes("a1")).toBe(rows.includes("a2"));
    for (const rows of r.seen) expect(rows).not.toContain("b1");
  });

  test("the same through bun:sqlite's transaction(async …) commits at the first await: readers see halves, the failure is kept", async () => {
    const { sqlite } = fresh();
    const insert = sqlite.prepare("INSERT INTO t (v) VALUES (?)");
    const read = async () =>
      sqlite
        .query<{ v: string }, []>("SELECT v FROM t ORDER BY rowid")
        .all()
        .map((r) => r.v);
    const r = await interleave(
      <T>(fn: () => Promise<T>) => sqlite.transaction(fn)() as Promise<T>,
      async (v) => insert.run(v),
      read,
    );
    // What the seam prevents: b1 survives b's failure, and a reader saw a1 without a2.
    expect(r.final).toContain("b1");
    expect(r.seen.some((rows) => rows.includes("a1") && !rows.includes("a2"))).toBe(true);
  });

  test("a nested transaction is a savepoint: undone alone when it throws, with what it asked to follow the commit", async () => {
    const { storage } = fresh();
    const followed: string[] = [];
    await storage.transaction(async () => {
      await storage.run("INSERT INTO t (v) VALUES ('outer')");
      storage.afterCommit(() => followed.push("outer"));
      await expect(
        storage.transaction(async () => {
          await storage.run("INSERT INTO t (v) VALUES ('inner')");
          storage.afterCommit(() => followed.push("inner"));
          throw new Error("inner fails");
        }),
      ).rejects.toThrow("inner fails");
      await storage.transaction(async () => {
        await storage.run("INSERT INTO t (v) VALUES ('kept')");
        storage.afterCommit(() => followed.push("kept"));
      });
      expect(followed).toEqual([]);
    });
    expect(await values(storage)).toEqual(["outer", "kept"]);
    expect(followed).toEqual(["outer", "kept"]);
  });

  test("units asked for in one turn share one commit; each failure is its own; after-commit steps follow only success", async () => {
    const { storage, commits } = fresh();
    const followed: string[] = [];
    const unit = (v: string, fail = false) =>
      storage.transaction(async () => {
        await storage.run("INSERT INTO t (v) VALUES (?)", [v]);
        storage.afterCommit(() => followed.push(v));
        if (fail) throw new Error(`${v} fails`);
        return v;
      });
    const results = await Promise.allSettled([unit("a"), unit("b", true), unit("c")]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(commits()).toBe(1);
    expect(await values(storage)).toEqual(["a", "c"]);
    expect(followed).toEqual(["a", "c"]);
  });

  test("only a commit that changed something reports the disk as taking writes (a unit that wrote nothing proves nothing)", async () => {
    const { sqlite, storage, commits } = fresh();
    // Units that only read, or change no row, commit with nothing to write: on a full disk they succeed too.
    await storage.transaction(async () => {
      await storage.all("SELECT v FROM t");
      await storage.run("UPDATE t SET v = 'never' WHERE v = 'absent'");
    });
    expect(commits()).toBe(0);
    await storage.transaction(async () => {
      await storage.run("INSERT INTO t (v) VALUES ('x')");
    });
    expect(commits()).toBe(1);
    // A write made inside a unit through the driver directly (a module not yet moved) counts as well.
    await storage.transaction(async () => {
      sqlite.run("INSERT INTO t (v) VALUES ('y')");
    });
    expect(commits()).toBe(2);
  });

  test("a write outside any unit is a unit of its own, on disk when its promise resolves; afterCommit outside a unit runs at once", async () => {
    const path = join(mkdtempSync(join(tmpdir(), "pigeon-storage-")), "t.db");
    const { storage } = fresh(path);
    await storage.run("INSERT INTO t (v) VALUES ('x')");
    const other = new Database(path, { readonly: true });
    expect(other.query("SELECT v FROM t").all()).toEqual([{ v: "x" }]);
    other.close();
    let ran = false;
    storage.afterCommit(() => {
      ran = true;
    });
    expect(ran).toBe(true);
    expect(storage.inTransaction).toBe(false);
    await storage.transaction(async () => expect(storage.inTransaction).toBe(true));
  });

  test("work a unit schedules for later runs outside it, not in its ended transaction", async () => {
    const { storage } = fresh();
    let later: Promise<unknown> | null = null;
    await storage.transaction(async () => {
      await storage.run("INSERT INTO t (v) VALUES ('first')");
      later = new Promise((resolve) => setTimeout(() => resolve(storage.run("INSERT INTO t (v) VALUES ('later')")), 5));
    });
    await later;
    expect(await values(storage)).toEqual(["first", "later"]);
  });
});

describe("which statements only read", () => {
  test.each([
    ["SELECT * FROM t", true],
    ["  select count(*) AS n FROM notification", true],
    ["WITH x AS (SELECT 1) SELECT * FROM x", true],
    ["INSERT INTO t (v) VALUES (?)", false],
    ["UPDATE t SET v = ?", false],
    ["DELETE FROM t RETURNING v", false],
    ["WITH RECURSIVE n(i) AS (SELECT 1) INSERT INTO t SELECT i FROM n", false],
    ["PRAGMA wal_checkpoint(TRUNCATE)", false],
  ])("%s → %p", (sql, reads) => {
    expect(readsOnly(sql)).toBe(reads);
  });
});

describe("dialect-specific snippets", () => {
  test("a JSON field reads the key on SQLite, and only a plain key is written into SQL", async () => {
    const { sqlite, storage } = fresh();
    sqlite.run("CREATE TABLE j (config TEXT)");
    await storage.run("INSERT INTO j (config) VALUES (?)", [JSON.stringify({ phoneNumberId: "123", other: "x" })]);
    const row = await storage.get<{ v: string }>(`SELECT ${jsonField("sqlite", "config", "phoneNumberId")} AS v FROM j`);
    expect(row?.v).toBe("123");
    expect(jsonField("postgres", "config", "phoneNumberId")).toBe("(config::json ->> 'phoneNumberId')");
    expect(() => jsonField("sqlite", "config", "a') OR 1=1 --")).toThrow();
  });

  test("an index hint is SQLite's INDEXED BY and nothing elsewhere", () => {
    expect(indexHint("sqlite", "notification_failover_idx")).toBe("INDEXED BY notification_failover_idx");
    expect(indexHint("postgres", "notification_failover_idx")).toBe("");
  });
});
