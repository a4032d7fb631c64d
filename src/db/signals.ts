// Hints between servers that share a PostgreSQL database, over its LISTEN/NOTIFY (no other server
// to run): "there is work for phone 7" reaches the server holding that phone's event stream, and a
// notification's new status reaches the servers showing its dashboard. A hint may be lost (a
// server restarting, a dropped connection); nothing depends on it but promptness — phones pull on
// every reconnect and at announce-due, pages reload their badges.
//
// Messages are coalesced: those published within SIGNAL_FLUSH_MS go out as one NOTIFY per topic
// (split to stay under PostgreSQL's 8,000-byte payload). A server ignores its own. On SQLite, and
// until `start()` (the test contexts never start it), publishing does nothing: the publishing
// server has already acted on the hint itself.
import type { PostgresPool } from "./postgres-storage";

const CHANNEL = "pigeon_signals";
const SIGNAL_FLUSH_MS = 20;
const MAX_PAYLOAD = 7_000;

export type SignalMessage = Record<string, string | number | boolean | null | Record<string, string> | number[]>;

export interface Signals {
  /** Queues `message` for every other server's `topic` handlers. */
  publish(topic: string, message: SignalMessage): void;
  /** Runs `handler` for each message another server publishes on `topic`. */
  subscribe(topic: string, handler: (message: SignalMessage) => void): void;
  /** Listens (PostgreSQL); from here on publishing sends. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export function createSignals(pool: PostgresPool | null, origin: string, log: (message: string, error?: unknown) => void): Signals {
  const handlers = new Map<string, ((message: SignalMessage) => void)[]>();
  const queued = new Map<string, SignalMessage[]>();
  let timer: ReturnType<typeof setTimeout> | null = null;
  let listening: { unlisten(): Promise<void> } | null = null;

  async function flush(): Promise<void> {
    timer = null;
    const batches = [...queued];
    queued.clear();
    for (const [topic, messages] of batches) {
      let chunk: SignalMessage[] = [];
      let size = 0;
      const send = async () => {
        if (chunk.length === 0) return;
        const payload = JSON.stringify({ o: origin, t: topic, m: chunk });
        chunk = [];
        size = 0;
        await pool!.unsafe("SELECT pg_notify($1, $2)", [CHANNEL, payload]);
      };
      for (const message of messages) {
        const length = JSON.stringify(message).length + 1;
        if (size + length > MAX_PAYLOAD) await send();
        chunk.push(message);
        size += length;
      }
      await send();
    }
  }

  function receive(payload: string): void {
    let parsed: { o: string; t: string; m: SignalMessage[] };
    try {
      parsed = JSON.parse(payload);
    } catch {
      return;
    }
    if (parsed.o === origin) return;
    for (const handler of handlers.get(parsed.t) ?? []) {
      for (const message of parsed.m) {
        try {
          handler(message);
        } catch (error) {
          log(`signal ${parsed.t} failed`, error);
        }
      }
    }
  }

  return {
    publish(topic, message) {
      if (!listening) return;
      const list = queued.get(topic);
      if (list) list.push(message);
      else queued.set(topic, [message]);
      timer ??= setTimeout(() => flush().catch((error) => log("could not signal the other servers", error)), SIGNAL_FLUSH_MS);
    },
    subscribe(topic, handler) {
      const list = handlers.get(topic);
      if (list) list.push(handler);
      else handlers.set(topic, [handler]);
    },
    async start() {
      if (pool === null || listening !== null) return;
      listening = await pool.listen(CHANNEL, receive);
    },
    async stop() {
      const was = listening;
      listening = null;
      if (timer) {
        clearTimeout(timer);
        await flush().catch(() => {});
      }
      await was?.unlisten().catch(() => {});
    },
  };
}
