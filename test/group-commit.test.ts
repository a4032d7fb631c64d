// The group commit under the send path: jobs of one event-loop turn share a transaction, a job
// that throws is rolled back alone, and what a job asks to follow its commit follows only its success.
import { Database } from "bun:sqlite";
import { expect, test } from "bun:test";
import { createGroupCommit } from "../src/db/group-commit";
import { createSqliteStorage } from "../src/db/sqlite-storage";

function fresh() {
  const sqlite = new Database(":memory:");
  sqlite.run("CREATE TABLE t (v TEXT NOT NULL)");
  const rows = () =>
    sqlite
      .query<{ v: string }, []>("SELECT v FROM t ORDER BY rowid")
      .all()
      .map((r) => r.v);
  return { sqlite, rows, commits: createGroupCommit(createSqliteStorage(sqlite)) };
}

test("jobs of one turn commit together; a failing job is rolled back alone and its after-commit step never runs", async () => {
  const { sqlite, rows, commits } = fresh();
  const followed: string[] = [];
  const job =
    (v: string, fail = false) =>
    () => {
      sqlite.run("INSERT INTO t (v) VALUES (?)", [v]);
      commits.afterCommit(() => followed.push(v));
      if (fail) throw new Error(`job ${v} failed`);
      return v;
    };
  const results = await Promise.allSettled([commits.submit(job("a")), commits.submit(job("b", true)), commits.submit(job("c"))]);
  expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
  expect(rows()).toEqual(["a", "c"]);
  expect(followed).toEqual(["a", "c"]);
});

test("an after-commit step that throws does not undo the replies, and afterCommit outside a job is refused", async () => {
  const { rows, commits, sqlite } = fresh();
  const out = await commits.submit(() => {
    sqlite.run("INSERT INTO t (v) VALUES ('x')");
    commits.afterCommit(() => {
      throw new Error("listener failed");
    });
    return 1;
  });
  expect(out).toBe(1);
  expect(rows()).toEqual(["x"]);
  expect(() => commits.afterCommit(() => {})).toThrow();
});
