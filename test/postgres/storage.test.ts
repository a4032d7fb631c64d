// The unit of work on both back ends (src/db/sqlite-storage.ts, src/db/postgres-storage.ts, the
// latter on a real throwaway PostgreSQL cluster): two async transactions interleaved are isolated
// from each other and from readers, a failing one is rolled back alone, nested ones are
// savepoints, what follows a commit follows only a commit, and a committed write is visible to
// other connections. On SQLite, units of one turn share one commit; the same scenario run through
// bun:sqlite's own `transaction(async …)` breaks isolation: that is what the seam is for.
import { Database } from "bun:sqlite";
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connectPostgres, createPostgresStorage, numberPlaceholders } from "../../src/db/postgres-storage";
import { createSqliteStorage, readsOnly } from "../../src/db/sqlite-storage";
import { indexHint, jsonField, type Storage } from "../../src/db/storage";
import { postgresCluster } from "../helpers/postgres";

function fresh(path = ":memory:") {
  const sqlite = new Database(path, { create: true, strict: true });
  sqlite.run("PRAGMA journal_mode = WAL");
  sqlite.run("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)");
  let commits = 0;
  const storage = createSqliteStorage(sqlite, { onCommit: () => commits++ });
  return { sqlite, storage, commits: () => commits };
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));
const values = (storage: Storage) => storage.all<{ v: string }>("SELECT v FROM t ORDER BY id").then((rows) => rows.map((r) => r.v));

/**
 * Two transactions at once: A writes a1, waits, writes a2; B writes b1, waits, then fails. A
 * reader polls the whole time. Each wait is a turn of the event loop, or, where reads run beside
 * a unit (`readsMeanwhile`: PostgreSQL's pool), until the reader has finished one more read, so
 * that it reads inside the transactions however slow the machine. Returns everything the reader
 * saw and the final rows.
 */
async function interleave(
  transaction: <T>(fn: () => Promise<T>) => Promise<T>,
  write: (v: string) => Promise<unknown>,
  read: () => Promise<string[]>,
  readsMeanwhile = false,
) {
  const seen: string[][] = [];
  const pause = async () => {
    const before = seen.length;
    do await tick();
    while (readsMeanwhile && seen.length === before);
  };
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
    await pause();
    await pause();
    await write("a2");
  });
  const b = transaction(async () => {
    await write("b1");
    await pause();
    throw new Error("b fails");
  });
  const outcomes = await Promise.allSettled([a, b]);
  done = true;
  await reader;
  return { seen, readsDuring, outcomes: outcomes.map((o) => o.status), final: await read() };
}

/** A back end under test: its storage on a fresh table `t`, and a read through another connection. */
interface Backend {
  storage: Storage;
  /** Whether a read outside a unit runs while the unit is under way (rather than waiting for it). */
  readsMeanwhile: boolean;
  /** The rows as another connection sees them (committed ones only). */
  elsewhere: () => Promise<string[]>;
}

const backends: [string, () => Promise<Backend>][] = [
  [
    "SQLite",
    async () => {
      const path = join(mkdtempSync(join(tmpdir(), "pigeon-storage-")), "t.db");
      const { storage } = fresh(path);
      return {
        storage,
        readsMeanwhile: false,
        elsewhere: async () => {
          const other = new Database(path, { readonly: true });
          try {
            return other
              .query<{ v: string }, []>("SELECT v FROM t ORDER BY id")
              .all()
              .map((r) => r.v);
          } finally {
            other.close();
          }
        },
      };
    },
  ],
  [
    "PostgreSQL",
    async () => {
      const { url, storage } = await freshPostgres("storage");
      const other = pool(url, 1);
      await storage.run("CREATE TABLE t (id serial PRIMARY KEY, v text NOT NULL)");
      return {
        storage,
        readsMeanwhile: true,
        elsewhere: async () => (await other.unsafe("SELECT v FROM t ORDER BY id")).map((r) => r.v as string),
      };
    },
  ],
];
const opened: { end(): Promise<void> }[] = [];
afterAll(async () => {
  for (const each of opened.splice(0)) await each.end();
});
/** A pool on `url`, ended after the file's tests. */
function pool(url: string, max: number) {
  const sql = connectPostgres(url, { max });
  opened.push(sql);
  return sql;
}
/** A new empty database on the test cluster, with its storage. */
async function freshPostgres(name: string) {
  const url = await (await postgresCluster()).createDatabase(name);
  return { url, storage: createPostgresStorage(pool(url, 4)) };
}

for (const [name, open] of backends) {
  describe(`the unit of work on ${name}`, () => {
    test("interleaved async transactions: a reader never sees half of one, and the failing one is rolled back alone", async () => {
      const { storage, readsMeanwhile } = await open();
      const r = await interleave(
        (fn) => storage.transaction(fn),
        (v) => storage.run("INSERT INTO t (v) VALUES (?)", [v]),
        () => values(storage),
        readsMeanwhile,
      );
      expect(r.outcomes).toEqual(["fulfilled", "rejected"]);
      expect(r.final).toEqual(["a1", "a2"]);
      expect(r.readsDuring).toBeGreaterThan(1);
      for (const rows of r.seen) expect(rows.includes("a1")).toBe(rows.includes("a2"));
      for (const rows of r.seen) expect(rows).not.toContain("b1");
    });

    test("a nested transaction is a savepoint: undone alone when it throws, with what it asked to follow the commit", async () => {
      const { storage } = await open();
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

    test("units at once: each failure is its own, and after-commit steps follow only success", async () => {
      const { storage } = await open();
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
      expect(await values(storage)).toEqual(["a", "c"]);
      expect(followed.sort()).toEqual(["a", "c"]);
    });

    test("a unit's writes reach other connections only when it commits; a write outside any unit at once", async () => {
      const { storage, elsewhere } = await open();
      await storage.transaction(async () => {
        await storage.run("INSERT INTO t (v) VALUES ('x')");
        expect(await elsewhere()).toEqual([]);
      });
      expect(await elsewhere()).toEqual(["x"]);
      await storage.run("INSERT INTO t (v) VALUES ('y')");
      expect(await elsewhere()).toEqual(["x", "y"]);
      let ran = false;
      storage.afterCommit(() => {
        ran = true;
      });
      expect(ran).toBe(true);
      expect(storage.inTransaction).toBe(false);
      await storage.transaction(async () => expect(storage.inTransaction).toBe(true));
    });

    test("work a unit schedules for later runs outside it, not in its ended transaction", async () => {
      const { storage } = await open();
      let later: Promise<unknown> | null = null;
      await storage.transaction(async () => {
        await storage.run("INSERT INTO t (v) VALUES ('first')");
        later = new Promise((resolve) => setTimeout(() => resolve(storage.run("INSERT INTO t (v) VALUES ('later')")), 5));
      });
      await later;
      expect(await values(storage)).toEqual(["first", "later"]);
    });

    test("counts and sums come back as numbers, a row that is not there as null, and run says how many rows changed", async () => {
      const { storage } = await open();
      for (const v of ["a", "b", "c"]) await storage.run("INSERT INTO t (v) VALUES (?)", [v]);
      expect(await storage.get("SELECT count(*) AS n, sum(id) AS s FROM t")).toEqual({ n: 3, s: 6 });
      expect(await storage.get("SELECT v FROM t WHERE v = ?", ["absent"])).toBeNull();
      expect((await storage.run("UPDATE t SET v = 'z' WHERE v <> ?", ["a"])).changes).toBe(2);
      // A ? inside a quoted string is text, not a parameter.
      expect(await storage.get("SELECT 'why?' AS q, v FROM t WHERE v = ?", ["a"])).toEqual({ q: "why?", v: "a" });
    });

    test("run counts the rows the statement changed, not those its triggers changed", async () => {
      // (bun:sqlite's own count adds the trigger's rows: an update of one row said 2.)
      const { storage } = await open();
      await storage.run("CREATE TABLE audit (n integer NOT NULL)");
      if (storage.dialect === "sqlite")
        await storage.run("CREATE TRIGGER t_audit AFTER UPDATE ON t BEGIN INSERT INTO audit (n) VALUES (1); END");
      else {
        await storage.run(
          "CREATE FUNCTION t_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO audit (n) VALUES (1); RETURN NULL; END $$",
        );
        await storage.run("CREATE TRIGGER t_audit AFTER UPDATE ON t FOR EACH ROW EXECUTE FUNCTION t_audit()");
      }
      await storage.run("INSERT INTO t (v) VALUES ('a')");
      expect((await storage.run("UPDATE t SET v = 'b' WHERE v = 'a'")).changes).toBe(1);
      expect((await storage.run("UPDATE t SET v = 'c' WHERE v = 'a'")).changes).toBe(0);
      expect(await storage.get("SELECT count(*) AS n FROM audit")).toEqual({ n: 1 });
    });
  });
}

describe("the unit of work on PostgreSQL alone", () => {
  test("a unit that PostgreSQL aborts for a deadlock runs again, and both units end committed", async () => {
    const { storage } = await freshPostgres("deadlock");
    await storage.run("CREATE TABLE acct (id int PRIMARY KEY, n int NOT NULL)");
    await storage.run("INSERT INTO acct (id, n) VALUES (1, 0), (2, 0)");
    const runs = { a: 0, b: 0 };
    let bothHoldOne: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      let count = 0;
      bothHoldOne = () => {
        if (++count === 2) resolve();
      };
    });
    // Each takes one row, waits until the other holds its own, then asks for the other's: a deadlock.
    const unit = (name: "a" | "b", first: number, second: number) =>
      storage.transaction(async () => {
        runs[name]++;
        await storage.run("UPDATE acct SET n = n + 1 WHERE id = ?", [first]);
        if (runs[name] === 1) {
          bothHoldOne();
          await held;
        }
        await storage.run("UPDATE acct SET n = n + 1 WHERE id = ?", [second]);
        return name;
      });
    expect(await Promise.all([unit("a", 1, 2), unit("b", 2, 1)])).toEqual(["a", "b"]);
    // One of them was aborted and ran again; every increment of both is there once.
    expect(runs.a + runs.b).toBe(3);
    expect(await storage.all("SELECT id, n FROM acct ORDER BY id")).toEqual([
      { id: 1, n: 2 },
      { id: 2, n: 2 },
    ]);
  });
});

describe("the unit of work on SQLite alone", () => {
  test("the same through bun:sqlite's transaction(async …) commits at the first await: readers see halves, the failure is kept", async () => {
    const { sqlite } = fresh();
    const insert = sqlite.prepare("INSERT INTO t (v) VALUES (?)");
    const read = async () =>
      sqlite
        .query<{ v: string }, []>("SELECT v FROM t ORDER BY id")
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

  test("units asked for in one turn share one commit (one fsync)", async () => {
    const { storage, commits } = fresh();
    const unit = (v: string) => storage.transaction(async () => storage.run("INSERT INTO t (v) VALUES (?)", [v]));
    await Promise.all([unit("a"), unit("b"), unit("c")]);
    expect(commits()).toBe(1);
    expect(await values(storage)).toEqual(["a", "b", "c"]);
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
    // A write made inside a unit through the driver directly counts as well.
    await storage.transaction(async () => {
      sqlite.run("INSERT INTO t (v) VALUES ('y')");
    });
    expect(commits()).toBe(2);
  });

  test("a unit whose failure ended the whole transaction (SQLite rolls back on a full disk or a missing temp file) fails its batch, and the next unit runs", async () => {
    const { sqlite, storage } = fresh();
    // Three units in one batch; the second ends the transaction under the others, as SQLite does
    // itself when a statement fails with SQLITE_FULL, then fails. Before, the batch never settled.
    const settled = await Promise.allSettled([
      storage.transaction(async () => storage.run("INSERT INTO t (v) VALUES ('before')")),
      storage.transaction(async () => {
        await storage.run("INSERT INTO t (v) VALUES ('mine')");
        sqlite.run("ROLLBACK");
        throw new Error("database or disk is full");
      }),
      storage.transaction(async () => storage.run("INSERT INTO t (v) VALUES ('after')")),
    ]);
    expect(settled.map((s) => s.status)).toEqual(["rejected", "rejected", "rejected"]);
    for (const s of settled) expect(String((s as PromiseRejectedResult).reason)).toContain("disk is full");
    // Nothing of the batch stands, and what comes next is stored as usual.
    expect(await values(storage)).toEqual([]);
    await storage.transaction(async () => storage.run("INSERT INTO t (v) VALUES ('next')"));
    expect(await values(storage)).toEqual(["next"]);
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

  test("the same JSON field reads the key on PostgreSQL", async () => {
    const { storage } = await freshPostgres("json");
    await storage.run("CREATE TABLE j (config text)");
    await storage.run("INSERT INTO j (config) VALUES (?)", [JSON.stringify({ phoneNumberId: "123", other: "x" })]);
    expect(await storage.get(`SELECT ${jsonField("postgres", "config", "phoneNumberId")} AS v FROM j`)).toEqual({ v: "123" });
  });

  test.each([
    ["SELECT * FROM t WHERE a = ? AND b = ?", "SELECT * FROM t WHERE a = $1 AND b = $2"],
    ["SELECT '?' AS q, \"we?ird\" FROM t WHERE a = ?", "SELECT '?' AS q, \"we?ird\" FROM t WHERE a = $1"],
    ["SELECT 'it''s?' FROM t -- why?\nWHERE a = ?", "SELECT 'it''s?' FROM t -- why?\nWHERE a = $1"],
    ["INSERT INTO t (a, b) VALUES (?, ?) RETURNING id", "INSERT INTO t (a, b) VALUES ($1, $2) RETURNING id"],
  ])("PostgreSQL's numbered parameters: %s", (sql, numbered) => {
    expect(numberPlaceholders(sql)).toBe(numbered);
  });

  test("an index hint is SQLite's INDEXED BY and nothing elsewhere", () => {
    expect(indexHint("sqlite", "notification_failover_idx")).toBe("INDEXED BY notification_failover_idx");
    expect(indexHint("postgres", "notification_failover_idx")).toBe("");
  });
});
