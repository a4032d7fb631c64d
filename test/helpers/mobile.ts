// The companion app's calls under /mobile/v1 against an in-process app, with the headers the app
// sends (its User-Agent names its version): register a phone, call its API, post its signed
// webhooks and read its event stream.
import { expect } from "bun:test";
import { expectEnvelope, type TestContext } from "./context";
import { phoneSignature } from "./phone";

export const APP_UA = "me.capcom.smsgateway/1.68.0";

export interface MobileReply {
  status: number;
  json: any;
}

/** One call of the app's API; `ua` is the User-Agent (the app version it names). */
export async function mobile(
  ctx: TestContext,
  method: string,
  path: string,
  opts: { auth?: string; body?: unknown; raw?: string; ua?: string; headers?: Record<string, string> } = {},
): Promise<MobileReply> {
  const headers: Record<string, string> = { "user-agent": opts.ua ?? APP_UA, ...(opts.headers ?? {}) };
  if (opts.auth) headers.authorization = opts.auth;
  const body = opts.raw ?? (opts.body !== undefined ? JSON.stringify(opts.body) : undefined);
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await ctx.app.handle(new Request(`http://localhost/mobile/v1${path}`, { method, headers, body }));
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : null };
}

/**
 * Registers a phone as the app does (app version `ua`), reads its settings for the signing key,
 * and gives what a test needs to act as it: its ids, its Bearer, and `post` for its webhooks.
 */
export async function pairMobile(ctx: TestContext, opts: { name?: string; simCards?: unknown[]; ua?: string } = {}) {
  const pairingToken = expectEnvelope(await ctx.get("/v1/api/device/pairing"), 200).data.pairing_token as string;
  const r = await mobile(ctx, "POST", "/device", {
    auth: `Bearer ${pairingToken}`,
    ua: opts.ua,
    body: { name: opts.name ?? "Xiaomi/vayu_eea", ...(opts.simCards ? { simCards: opts.simCards } : {}) },
  });
  expect(r.status).toBe(201);
  const bearer = `Bearer ${r.json.token}`;
  const key = (await mobile(ctx, "GET", "/settings", { auth: bearer, ua: opts.ua })).json.webhooks.signing_key as string;
  const deviceId = ((await ctx.sql.get("SELECT id FROM device WHERE external_id = ?", [r.json.id])) as { id: number }).id;
  let n = 0;
  return {
    id: r.json.id as string,
    pairingToken,
    bearer,
    deviceId,
    /** Posts one webhook event of the app's WebHookEventDTO shape, signed as the app signs it. */
    post(event: string, payload: Record<string, unknown>) {
      const raw = JSON.stringify({
        id: `evt-${++n}-${r.json.id}`,
        webhookId: `pigeon-${event.replace(":", "-")}`,
        event,
        deviceId: r.json.id,
        payload,
      });
      return mobile(ctx, "POST", "/webhook", { raw, ua: opts.ua, headers: phoneSignature(key, raw, ctx.clock.now()) });
    },
  };
}

/** The phone's event stream, read until a frame appears. */
export async function openStream(ctx: TestContext, bearer: string) {
  const res = await ctx.app.handle(
    new Request("http://localhost/mobile/v1/events", { headers: { authorization: bearer, "user-agent": "okhttp/4.10.0" } }),
  );
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  return {
    async until(needle: string) {
      while (!buffer.includes(needle)) buffer += decoder.decode((await reader.read()).value);
    },
    get text() {
      return buffer;
    },
    close: () => reader.cancel(),
  };
}

/** The phone's download (GET /message) with its device token: the messages it is handed. */
export async function pullMessages(ctx: TestContext, token: string): Promise<Record<string, unknown>[]> {
  const res = await mobile(ctx, "GET", "/message", { auth: `Bearer ${token}` });
  expect(res.status).toBe(200);
  return res.json;
}

/** The phone's state report (PATCH /message) with its device token. */
export async function reportStates(ctx: TestContext, token: string, body: unknown): Promise<void> {
  expect((await mobile(ctx, "PATCH", "/message", { auth: `Bearer ${token}`, body })).status).toBe(204);
}
