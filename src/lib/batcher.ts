// Asks that arrive while an earlier one of the same kind is still being answered are answered
// together. The first ask of a kind goes at once (no waiting when the server is quiet); asks that
// come while `parallel` runs of their kind are in flight queue, and the next run takes all of
// them, up to `max`. Under load a run answers many asks with the database work of one (one
// admission of a key for many requests, one unit of work for many sends); when it is quiet
// nothing changes. A run that throws fails every ask it took, and only those.

export type Batch<A, R> = (kind: string, ask: A) => Promise<R>;

interface Waiting<A, R> {
  ask: A;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}

interface Queue<A, R> {
  waiting: Waiting<A, R>[];
  /** Runs of this kind in flight. */
  running: number;
}

/**
 * `run` answers the asks it is given, in their order (one result an ask). Asks of different kinds
 * never share a run, and runs of different kinds go on at the same time; of one kind, at most
 * `parallel` (default 1) at once.
 */
export function createBatcher<A, R>(run: (asks: A[]) => Promise<R[]>, options: { max?: number; parallel?: number } = {}): Batch<A, R> {
  const max = options.max ?? 100;
  const parallel = options.parallel ?? 1;
  const queues = new Map<string, Queue<A, R>>();

  async function drain(kind: string, queue: Queue<A, R>): Promise<void> {
    queue.running++;
    try {
      while (queue.waiting.length > 0) {
        const taken = queue.waiting.splice(0, max);
        try {
          const results = await run(taken.map((w) => w.ask));
          for (const [i, w] of taken.entries()) w.resolve(results[i]);
        } catch (error) {
          for (const w of taken) w.reject(error);
        }
      }
    } finally {
      queue.running--;
      if (queue.running === 0 && queue.waiting.length === 0) queues.delete(kind);
    }
  }

  return (kind, ask) =>
    new Promise<R>((resolve, reject) => {
      let queue = queues.get(kind);
      if (!queue) {
        queue = { waiting: [], running: 0 };
        queues.set(kind, queue);
      }
      queue.waiting.push({ ask, resolve, reject });
      if (queue.running < parallel) void drain(kind, queue);
    });
}
