// A paired phone that reports received MMS as the app does (mms:downloaded, its parts in base64),
// for the tests of what Pigeon keeps of them: the attachments' own, retention's, privacy's.
import { expect } from "bun:test";
import { MMS_PICTURE_PNG } from "../../src/cli/simulate-phone/reports";
import { expectEnvelope, type TestContext } from "./context";
import { postPhoneWebhook, registerAppPhone } from "./phone";

/** The simulated phone's picture: an 8×8 PNG. */
export const PNG = Buffer.from(MMS_PICTURE_PNG, "base64");

/** A part as the app's MmsContentReader reads it: its bytes in base64 and their count. */
export const mmsPart = (partId: number, contentType: string, name: string | null, bytes: Buffer) => ({
  partId,
  contentType,
  name,
  size: bytes.length,
  data: bytes.toString("base64"),
});

export async function mmsPhone(ctx: TestContext) {
  const reg = await registerAppPhone(ctx, "Phone", { "user-agent": "me.capcom.smsgateway/1.68.0" });
  let n = 0;
  return {
    /** An MMS from `sender` downloaded now, with these parts. */
    async download(sender: string, body: string, parts: ReturnType<typeof mmsPart>[]) {
      const id = ++n;
      const raw = JSON.stringify({
        id: `mms-evt-${id}`,
        webhookId: "w",
        event: "mms:downloaded",
        deviceId: reg.id,
        payload: { messageId: `mms-${id}`, sender, body, attachments: parts, receivedAt: new Date(ctx.clock.now()).toISOString() },
      });
      expect((await postPhoneWebhook(ctx, reg.signingKey, raw)).status).toBe(204);
    },
  };
}

/** The messages of `peer`'s SMS thread, newest first, and the thread's id. */
export async function threadOf(ctx: TestContext, peer: string) {
  const thread = expectEnvelope(await ctx.get("/v1/api/thread/list"), 200).data.threads.find((t: { peer: string }) => t.peer === peer);
  if (!thread) return null;
  const messages = expectEnvelope(await ctx.get(`/v1/api/thread/${thread.thread_id}/messages`), 200).data.messages;
  return { threadId: thread.thread_id as number, messages };
}

/** GET of a URL with the context's key (or another): status, headers and the bytes. */
export async function getBytes(ctx: TestContext, url: string, key = ctx.key) {
  const res = await ctx.app.handle(
    new Request(`http://localhost${url}`, { headers: { authorization: `Bearer ${key.api_key}`, "x-api-secret": key.api_secret } }),
  );
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}
