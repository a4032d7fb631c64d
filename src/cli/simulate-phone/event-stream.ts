// The server-sent events stream the app keeps open: a text/event-stream parser with OkHttp's
// rules, and the loop that reads the stream and reopens it with the app's back-off.
import type { Lifetime } from "./lifetime";
import type { ProtocolClient } from "./protocol";
import { errorText } from "./wire";

/** The app's SSE back-off: 5 s for the first five failures in a row, 30 s up to the tenth, then 60 s. */
export function reconnectDelay(failures: number): number {
  return failures > 10 ? 60_000 : failures > 5 ? 30_000 : 5_000;
}

/**
 * An incremental text/event-stream parser with the rules OkHttp (and so the app) follows: comment
 * lines are skipped, data lines are joined with "\n", and a frame without data is not dispatched.
 */
export class EventStreamParser {
  private buffer = "";
  private event = "";
  private data: string[] = [];

  constructor(private readonly onEvent: (event: string | null, data: string) => void) {}

  push(chunk: string): void {
    this.buffer += chunk;
    for (;;) {
      const end = this.buffer.search(/\r\n|\r|\n/);
      if (end < 0) return;
      // A CR at the very end may be the first half of a CRLF split across chunks.
      if (this.buffer[end] === "\r" && end === this.buffer.length - 1) return;
      const width = this.buffer.startsWith("\r\n", end) ? 2 : 1;
      this.line(this.buffer.slice(0, end));
      this.buffer = this.buffer.slice(end + width);
    }
  }

  private line(line: string): void {
    if (line === "") {
      if (this.data.length > 0) this.onEvent(this.event || null, this.data.join("\n"));
      this.event = "";
      this.data = [];
      return;
    }
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "event") this.event = value;
    else if (field === "data") this.data.push(value);
  }
}

export interface StreamHandlers {
  /** Each time the stream is (re)opened: the app pulls then, in case it missed an event. */
  onOpen(): void;
  onEvent(event: string | null, data: string): void;
}

/** Reads the stream until the phone stops, reopening it after each end with the app's back-off. */
export async function listenForEvents(first: Response, client: ProtocolClient, life: Lifetime, handlers: StreamHandlers): Promise<void> {
  let stream: Response | null = first;
  let failures = 0;
  while (!life.stopped) {
    let reason: string;
    if (stream) {
      // The app counts failures in a row: a successful open starts the back-off afresh.
      failures = 0;
      life.log("events stream open");
      handlers.onOpen();
      reason = await consume(stream, handlers);
      if (life.stopped) return;
    } else {
      reason = "could not reconnect";
    }
    failures += 1;
    const wait = reconnectDelay(failures);
    life.log(`events stream ${reason}; reconnecting in ${wait / 1000} s`);
    if (!(await life.sleep(wait))) return;
    try {
      stream = await client.openEvents();
    } catch (error) {
      if (life.stopped) return;
      life.log(errorText(error));
      stream = null;
    }
  }
}

/** Reads the stream until it ends; returns why it ended. */
async function consume(res: Response, handlers: StreamHandlers): Promise<string> {
  const parser = new EventStreamParser((event, data) => handlers.onEvent(event, data));
  const decoder = new TextDecoder();
  const reader = res.body!.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return "closed by the server";
      parser.push(decoder.decode(value, { stream: true }));
    }
  } catch (error) {
    return `failed (${errorText(error)})`;
  }
}
