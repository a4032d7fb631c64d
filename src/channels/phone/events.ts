// Server-Sent Events to paired phones (GET /mobile/v1/events). A stream per open connection; events
// are hints ("there is work", "this one is cancelled") — the phone then pulls, so an event lost to
// a dropped connection costs nothing: the app pulls again on every reconnect.
const encoder = new TextEncoder();

export type PhoneEvent = "MessageEnqueued" | "MessageCancelled" | "WebhooksUpdated" | "SettingsUpdated" | "MessagesExportRequested";

export const KEEPALIVE_MS = 15_000;

interface Stream {
  controller: ReadableStreamDefaultController<Uint8Array>;
  timer: ReturnType<typeof setInterval>;
}

/**
 * `keepaliveMs`: how often an open stream is pinged and its phone marked alive; under the offline
 * threshold, so a phone on an open stream never looks offline (a shortened threshold shortens it).
 */
export function createPhoneEventHub(
  onAlive: (deviceId: number) => void,
  keepaliveMs = KEEPALIVE_MS,
  /** A device's first stream opened (true) or its last closed (false). */
  onStreams: (deviceId: number, open: boolean) => void = () => {},
) {
  const streams = new Map<number, Set<Stream>>();
  const pendingEnqueue = new Map<number, ReturnType<typeof setTimeout>>();

  function write(stream: Stream, chunk: string): boolean {
    try {
      stream.controller.enqueue(encoder.encode(chunk));
      return true;
    } catch {
      return false;
    }
  }

  function remove(deviceId: number, stream: Stream) {
    clearInterval(stream.timer);
    const set = streams.get(deviceId);
    const had = set?.delete(stream) ?? false;
    if (set && set.size === 0) {
      streams.delete(deviceId);
      if (had) onStreams(deviceId, false);
    }
  }

  /** Sends an event to every open stream of a device. */
  function notify(deviceId: number, event: PhoneEvent, data: Record<string, string> | null = null) {
    for (const stream of streams.get(deviceId) ?? []) {
      if (!write(stream, `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)) remove(deviceId, stream);
    }
  }

  return {
    /** A new event stream for a device, with a `:keepalive` comment every 15 s (keepaliveMs) that also marks it alive. */
    open(deviceId: number): ReadableStream<Uint8Array> {
      let stream: Stream;
      return new ReadableStream<Uint8Array>({
        start(controller) {
          stream = {
            controller,
            timer: setInterval(() => {
              if (write(stream, ":keepalive\n\n")) onAlive(deviceId);
              else remove(deviceId, stream);
            }, keepaliveMs),
          };
          const set = streams.get(deviceId) ?? new Set<Stream>();
          streams.set(deviceId, set);
          set.add(stream);
          if (set.size === 1) onStreams(deviceId, true);
          // A comment first, so proxies and clients see the stream open at once.
          write(stream, ":connected\n\n");
        },
        cancel() {
          remove(deviceId, stream);
        },
      });
    },

    notify,

    /** Whether the device has an event stream open now. */
    isOpen: (deviceId: number): boolean => (streams.get(deviceId)?.size ?? 0) > 0,

    /**
     * "There is work": coalesced, so a burst of sends costs the phone one pull, and sent only if
     * `stillWanted()` says so when it goes out (the phone's pacing may have no room left).
     */
    enqueued(deviceId: number, stillWanted: () => boolean | Promise<boolean> = () => true) {
      if (pendingEnqueue.has(deviceId) || !streams.has(deviceId)) return;
      pendingEnqueue.set(
        deviceId,
        setTimeout(() => {
          pendingEnqueue.delete(deviceId);
          if (!streams.has(deviceId)) return;
          // A failed check (the database closing under a shutdown) tells the phone nothing; its
          // next pull or the next announcement finds the work.
          Promise.resolve(stillWanted()).then(
            (wanted) => {
              if (wanted && streams.has(deviceId)) notify(deviceId, "MessageEnqueued");
            },
            () => {},
          );
        }, 50),
      );
    },

    closeAll() {
      for (const [deviceId, set] of streams) {
        for (const stream of set) {
          try {
            stream.controller.close();
          } catch {
            /* already closed */
          }
          remove(deviceId, stream);
        }
      }
      for (const timer of pendingEnqueue.values()) clearTimeout(timer);
      pendingEnqueue.clear();
    },
  };
}

export type PhoneEventHub = ReturnType<typeof createPhoneEventHub>;
