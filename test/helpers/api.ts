// Send and wait helpers shared by the test files, so each file states only what it checks.
import { expectEnvelope, type TestContext } from "./context";

export const SEND_PATH = "/v1/notification/sms/api/send";

/** Posts a send and asserts the envelope with `status`; returns the envelope. */
export async function postSend(ctx: TestContext, body: Record<string, unknown>, status = 200) {
  return expectEnvelope(await ctx.post(SEND_PATH, body), status);
}

/**
 * A send function with a file's usual fields filled in; each call may override any of them and
 * gets back the new notification's id (the send must be accepted).
 */
export function smsSender(defaults: Record<string, unknown>) {
  return async (ctx: TestContext, body: Record<string, unknown> = {}) =>
    (await postSend(ctx, { ...defaults, ...body })).data.notification_id as number;
}

/** A notification's detail as the API returns it. */
export async function notificationOf(ctx: TestContext, id: number) {
  return expectEnvelope(await ctx.get(`/v1/api/notification/${id}`), 200).data;
}

export interface WaitOptions {
  timeoutMs?: number;
  intervalMs?: number;
  /** Extra text for the timeout error (a log, say), read only when the wait fails. */
  detail?: () => string;
}

/**
 * Polls `probe` until it returns something truthy and returns that; throws with `what` in the
 * message once `timeoutMs` has passed. For tests against real processes and sockets, where a
 * manual clock cannot be moved instead.
 */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | null | undefined | false> | T | null | undefined | false,
  { timeoutMs = 15_000, intervalMs = 50, detail }: WaitOptions = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${detail ? `; ${detail()}` : ""}`);
    await Bun.sleep(intervalMs);
  }
}

/**
 * Polls `done` for at most `timeoutMs` without failing: the caller asserts on the state it finds,
 * so a timeout shows up as that assertion's own message. Returns whether `done` held.
 */
export async function settle(done: () => boolean | Promise<boolean>, timeoutMs: number, intervalMs = 20): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() >= deadline) return false;
    await Bun.sleep(intervalMs);
  }
  return true;
}
