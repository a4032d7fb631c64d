// Values a server keeps between requests while the database says they are current. On PostgreSQL
// every change to what these caches hold (keys, accounts, plans, workspaces and their settings,
// opt-outs, devices) adds one to the database's cache generation, in the transaction that makes
// the change (migrations-pg/0011_cache_generation.sql). Each request reads that number when it is
// admitted (pigeon_admit's statement returns it) and carries it as `seen`; a value kept here is
// used only if it was read after the request's `seen` was current, that is, if its tag is at least
// `seen`. A value read in a request is tagged with that request's `seen` (read before it), so it
// holds every change committed up to then. SQLite keeps the same number with triggers of its own
// (migrations/0034_cache_generation.sql, which the CLI's writes fire too), read once a request by
// the in-memory limiter before the key.

export interface GenerationCache<K, V> {
  /** The value kept for `key` if it is as new as `seen`; undefined when none is, or no `seen`. */
  get(key: K, seen: number | undefined): V | undefined;
  /** Keeps `value`, read once generation `tag` was current; nothing when there is no tag. */
  set(key: K, value: V, tag: number | undefined): void;
  /** The value kept for `key` and its tag, whatever the tag. */
  peek(key: K): { value: V; tag: number } | undefined;
  delete(key: K): void;
  readonly size: number;
}

/** A cache of at most `capacity` entries; the oldest kept goes first when it is full. */
export function createGenerationCache<K, V>(capacity = 10_000): GenerationCache<K, V> {
  const entries = new Map<K, { value: V; tag: number }>();
  return {
    get(key, seen) {
      if (seen === undefined) return undefined;
      const entry = entries.get(key);
      return entry && entry.tag >= seen ? entry.value : undefined;
    },
    set(key, value, tag) {
      if (tag === undefined) return;
      entries.delete(key);
      if (entries.size >= capacity) entries.delete(entries.keys().next().value as K);
      entries.set(key, { value, tag });
    },
    peek: (key) => entries.get(key),
    delete: (key) => void entries.delete(key),
    get size() {
      return entries.size;
    },
  };
}
