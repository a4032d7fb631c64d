// src/lib/turns.ts: at most `limit` at once, the others in the order they came, and a turn that
// fails passes on like one that succeeds.
import { expect, test } from "bun:test";
import { createTurns } from "../../src/lib/turns";

test("at most the limit run at once, the rest in the order they came; a failure passes its turn on", async () => {
  const inTurn = createTurns(2);
  let now = 0;
  let most = 0;
  const started: number[] = [];
  const gates = Array.from({ length: 6 }, () => Promise.withResolvers<void>());
  const runs = gates.map((gate, i) =>
    inTurn(async () => {
      started.push(i);
      now++;
      most = Math.max(most, now);
      await gate.promise;
      now--;
      if (i === 1) throw new Error("the second fails");
      return i;
    }),
  );
  const all = Promise.allSettled(runs);
  await Bun.sleep(1);
  expect(started).toEqual([0, 1]);
  // Let them end out of order: each ending lets the next waiting one in.
  gates[1].resolve();
  await Bun.sleep(1);
  expect(started).toEqual([0, 1, 2]);
  gates[0].resolve();
  await Bun.sleep(1);
  expect(started).toEqual([0, 1, 2, 3]);
  for (const gate of gates) gate.resolve();
  const settled = await all;
  expect(settled.map((s) => (s.status === "fulfilled" ? s.value : "failed"))).toEqual([0, "failed", 2, 3, 4, 5]);
  expect(started).toEqual([0, 1, 2, 3, 4, 5]);
  expect(most).toBe(2);
  // All turns were given back: two new runs start at once.
  const again = [Promise.withResolvers<void>(), Promise.withResolvers<void>()];
  let running = 0;
  const both = again.map((g) =>
    inTurn(async () => {
      running++;
      await g.promise;
    }),
  );
  await Bun.sleep(1);
  expect(running).toBe(2);
  for (const g of again) g.resolve();
  await Promise.all(both);
});
