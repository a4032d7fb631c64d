// Live status badges: each open dashboard page may hold one event stream (GET /dashboard/live).
// A notification's status change is noted when it happens and sent shortly after, read back from
// the database — so a browser only ever sees states that were committed, and a burst of changes
// costs one read. Streams carry a comment every 15 s, so idle connections stay open.
import { shownStatus } from "../modules/notifications/service";
import type { Signals } from "../db/signals";
import type { NotificationState } from "../modules/notifications/state";

const encoder = new TextEncoder();
const KEEPALIVE_MS = 15_000;
const FLUSH_MS = 150;

type Controller = ReadableStreamDefaultController<Uint8Array>;

/** One hub per server (the composition root builds it), so each change is heard once, however many apps are made. */
export function createLiveHub(state: Pick<NotificationState, "getMany" | "onTransition">, signals: Signals) {
  const streams = new Map<number, Set<Controller>>();
  const changed = new Set<number>();
  let timer: ReturnType<typeof setTimeout> | null = null;

  function send(controller: Controller, chunk: string, workspaceId: number): void {
    try {
      controller.enqueue(encoder.encode(chunk));
    } catch {
      streams.get(workspaceId)?.delete(controller);
    }
  }

  async function flush(): Promise<void> {
    timer = null;
    const ids = [...changed];
    changed.clear();
    const rows = [];
    // In chunks, so a burst of changes never makes one statement with too many parameters.
    for (let i = 0; i < ids.length; i += 500) rows.push(...(await state.getMany(ids.slice(i, i + 500))));
    for (const row of rows) {
      const open = streams.get(row.workspaceId);
      if (!open) continue;
      const frame = `event: status\ndata: ${JSON.stringify({ id: row.id, status: shownStatus(row) })}\n\n`;
      for (const controller of open) send(controller, frame, row.workspaceId);
    }
  }

  function note(workspaceId: number, id: number): void {
    if (!streams.has(workspaceId)) return;
    changed.add(id);
    // A flush that cannot read (the database closing) drops the badges' update; the page reloads them.
    if (timer === null) timer = setTimeout(() => flush().catch(() => {}), FLUSH_MS);
  }

  // A change made on another server (its worker, a phone's report to it) reaches pages open here.
  state.onTransition((before) => {
    note(before.workspaceId, before.id);
    signals.publish("live", { workspace: before.workspaceId, id: before.id });
  });
  signals.subscribe("live", (message) => note(Number(message.workspace), Number(message.id)));

  return {
    open(workspaceId: number): Response {
      let controller: Controller;
      let keepalive: ReturnType<typeof setInterval>;
      const close = () => {
        clearInterval(keepalive);
        const set = streams.get(workspaceId);
        set?.delete(controller);
        if (set?.size === 0) streams.delete(workspaceId);
      };
      const body = new ReadableStream<Uint8Array>({
        start(c) {
          controller = c;
          const set = streams.get(workspaceId) ?? new Set<Controller>();
          streams.set(workspaceId, set);
          set.add(c);
          send(c, ": live\n\n", workspaceId);
          keepalive = setInterval(() => send(c, ": keepalive\n\n", workspaceId), KEEPALIVE_MS);
        },
        cancel: close,
      });
      return new Response(body, {
        headers: { "content-type": "text/event-stream", "cache-control": "no-store", "x-accel-buffering": "no" },
      });
    },
  };
}

export type LiveHub = ReturnType<typeof createLiveHub>;
