// Background work and time for one simulated phone: every task it starts is tracked so stop()
// can wait for it, and every timer and sleep ends early once the phone is stopped.
import { errorText } from "./wire";

export class Lifetime {
  private readonly stopping = new AbortController();
  private readonly inflight = new Set<Promise<void>>();
  private readonly timers = new Set<ReturnType<typeof setTimeout>>();

  constructor(readonly log: (line: string) => void) {}

  get stopped(): boolean {
    return this.stopping.signal.aborted;
  }

  /** Aborted by stop(): for calls nothing waits for once the phone is stopped. */
  get signal(): AbortSignal {
    return this.stopping.signal;
  }

  /** Stops the timers and cuts short what waits on the signal, then waits for tracked work. */
  async stop(): Promise<void> {
    if (!this.stopped) {
      this.stopping.abort();
      for (const timer of this.timers) clearTimeout(timer);
      this.timers.clear();
    }
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
  }

  track(work: Promise<unknown>): void {
    const settled = work.then(
      () => undefined,
      (error) => {
        if (!this.stopped) this.log(`error: ${errorText(error)}`);
      },
    );
    this.inflight.add(settled);
    void settled.finally(() => this.inflight.delete(settled));
  }

  later(ms: number, run: () => void): void {
    if (this.stopped) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      run();
    }, ms);
    this.timers.add(timer);
  }

  /** Waits, or returns false at once when the phone is stopped. */
  sleep(ms: number): Promise<boolean> {
    if (this.stopped) return Promise.resolve(false);
    return new Promise((resolve) => {
      const signal = this.stopping.signal;
      const onAbort = () => {
        clearTimeout(timer);
        resolve(false);
      };
      const timer = setTimeout(() => {
        signal.removeEventListener("abort", onAbort);
        resolve(true);
      }, ms);
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }
}
