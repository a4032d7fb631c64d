// What the two storages' units of work have in common: the current unit carried through the async
// call chain, nested units as savepoints, and the steps that wait for a unit's commit. Each
// storage (sqlite-storage.ts, postgres-storage.ts) decides how a unit begins and commits.
import { AsyncLocalStorage } from "node:async_hooks";

export interface UnitState {
  /** How many savepoints deep the unit is now. */
  depth: number;
  /** Steps to run once the unit has committed. */
  afterCommit: (() => void)[];
  /** Set once the unit has ended: work it scheduled and that runs later is no longer inside it. */
  ended: boolean;
}

export function createUnits<U extends UnitState>() {
  const current = new AsyncLocalStorage<U>();
  /** The unit of work the caller is in, if it is still open. */
  const unitOf = (): U | null => {
    const unit = current.getStore();
    return unit && !unit.ended ? unit : null;
  };
  return {
    /** Runs `fn` as `unit`'s body. */
    run: <T>(unit: U, fn: () => T): T => current.run(unit, fn),
    unitOf,
    /** Inside a unit: `callback` after its commit (never after a rollback); outside one: now. */
    afterCommit(callback: () => void): void {
      const unit = unitOf();
      if (unit) unit.afterCommit.push(callback);
      else callback();
    },
  };
}

/**
 * A unit nested in `unit`, as a savepoint (`exec` runs one statement on the unit's connection,
 * at once or as a promise): undone alone when `fn` throws, with the after-commit steps it asked for.
 */
export async function inSavepoint<T>(unit: UnitState, exec: (sql: string) => unknown, fn: () => Promise<T>): Promise<T> {
  const run = async (sql: string) => {
    const pending = exec(sql) as { then?: unknown } | undefined;
    if (typeof pending?.then === "function") await pending;
  };
  const name = `nested${++unit.depth}`;
  const hooks = unit.afterCommit.length;
  await run(`SAVEPOINT ${name}`);
  try {
    const value = await fn();
    await run(`RELEASE SAVEPOINT ${name}`);
    return value;
  } catch (error) {
    await run(`ROLLBACK TO SAVEPOINT ${name}`);
    await run(`RELEASE SAVEPOINT ${name}`);
    unit.afterCommit.length = hooks;
    throw error;
  } finally {
    unit.depth--;
  }
}

/** A committed unit's after-commit steps; one that throws is reported and does not stop the others. */
export function runAfterCommit(steps: readonly (() => void)[], log?: (message: string, error?: unknown) => void): void {
  for (const step of steps) {
    try {
      step();
    } catch (error) {
      log?.("an after-commit step failed", error);
    }
  }
}
