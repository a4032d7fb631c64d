// Subscribed resources, watched by reading a fingerprint of each (a thread's message count and
// newest message, a message's status and last change) every interval and telling the subscriber
// when it changed. Reading the database's committed state, rather than hearing events in this
// process, is what lets a change made on any replica (an SMS posted to another server, an approval
// decided there) reach a subscription held on this one, and what `pigeon mcp` can do from outside.
// The timer runs only while something is watched.

export type Fingerprint = (uri: string) => Promise<string | null>;

interface Watched {
  fingerprint: Fingerprint;
  notify: (uri: string) => void;
  last: string | null;
  holders: number;
}

export function createWatcher(intervalMs: number, log: (message: string, error?: unknown) => void) {
  const watched = new Map<string, Watched>();
  let timer: ReturnType<typeof setInterval> | null = null;
  let ticking = false;

  async function tick(): Promise<void> {
    if (ticking) return;
    ticking = true;
    try {
      for (const [id, w] of [...watched]) {
        const uri = id.slice(id.indexOf(" ") + 1);
        let now: string | null;
        try {
          now = await w.fingerprint(uri);
        } catch (error) {
          log(`mcp: could not read ${uri}`, error);
          continue;
        }
        if (now !== null && now !== w.last) {
          w.last = now;
          if (watched.get(id) === w) w.notify(uri);
        }
      }
    } finally {
      ticking = false;
    }
  }

  return {
    /**
     * Watches `uri` for the holder `scope` (an API key; a stdio connection) until the returned
     * function is called; holders of the same scope and URI share one read and one notice.
     */
    async watch(scope: string, uri: string, fingerprint: Fingerprint, notify: (uri: string) => void): Promise<() => void> {
      const id = `${scope} ${uri}`;
      let w = watched.get(id);
      if (w) w.holders++;
      else {
        w = { fingerprint, notify, last: await fingerprint(uri).catch(() => null), holders: 1 };
        watched.set(id, w);
      }
      if (timer === null) {
        timer = setInterval(() => void tick(), intervalMs);
        (timer as { unref?: () => void }).unref?.();
      }
      let released = false;
      const held = w;
      return () => {
        if (released) return;
        released = true;
        held.holders--;
        if (held.holders === 0 && watched.get(id) === held) watched.delete(id);
        if (watched.size === 0 && timer !== null) {
          clearInterval(timer);
          timer = null;
        }
      };
    },
    /** How many scope and URI pairs are watched (for tests and the start-up line). */
    size: () => watched.size,
    stop(): void {
      watched.clear();
      if (timer !== null) clearInterval(timer);
      timer = null;
    },
  };
}

export type Watcher = ReturnType<typeof createWatcher>;
