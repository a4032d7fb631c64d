// At most `limit` of some work at once, the rest waiting their turn in the order they came. The
// bulk send runs under it: 32 bulk requests interleaved at every await held 32 requests' worth of
// items, prepared and half-stored, at once, where their turns one or two at a time hold two.

export function createTurns(limit: number) {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async function inTurn<T>(fn: () => Promise<T>): Promise<T> {
    if (running >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
    else running++;
    try {
      return await fn();
    } finally {
      // The turn passes straight to the next in line (running stays the same), or is given back.
      const next = waiting.shift();
      if (next) next();
      else running--;
    }
  };
}
