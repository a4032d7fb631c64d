// What the in-process Twilio tests share: a context whose key's plan does not get in the way, the
// app on a loopback port (Twilio's library speaks HTTP), a cloud number on the local fake provider
// (the phone that receives what is sent), credits, and the workspace's account SID and auth token.
import twilio from "twilio";
import { createTestContext, type TestContext } from "./context";
import { startFakeCloud, type FakeCloud } from "./fake-cloud";

export interface TwilioRig {
  ctx: TestContext;
  server: ReturnType<typeof Bun.serve>;
  fake: FakeCloud;
  cloudId: number;
  sid: string;
  token: string;
  /** The base URL to give a Twilio client's domains. */
  url: string;
  /** A Twilio client whose Messages and Verify domains are this server; the account's credentials unless others are given. */
  client(user?: string, password?: string, accountSid?: string): ReturnType<typeof twilio>;
  stop(): void;
}

/** The Twilio error a call ends with, as its library reads it: HTTP status and Twilio's code. */
export async function twilioRefusal(call: Promise<unknown>): Promise<{ status: number; code: number }> {
  try {
    await call;
  } catch (error) {
    const e = error as { status: number; code: number };
    return { status: e.status, code: e.code };
  }
  throw new Error("the call succeeded");
}

export async function startTwilioRig(): Promise<TwilioRig> {
  const ctx = await createTestContext();
  await ctx.services.accounts.upsertPlan({
    code: "owner",
    name: "Owner",
    monthlySmsLimit: null,
    requestsPerMinute: 100_000,
    requestsPerDay: 1_000_000,
  });
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => ctx.app.handle(req) });
  const fake = await startFakeCloud({ deliver: (req) => ctx.app.handle(req) });
  const cloudId = (await ctx.cloudDevice(fake)).device_id;
  await ctx.topUp(1000);
  const { account_sid: sid, auth_token: token } = await ctx.services.twilio.credentials(ctx.workspace.id);
  return {
    ctx,
    server,
    fake,
    cloudId,
    sid,
    token,
    url: `http://127.0.0.1:${server.port}`,
    client(user = sid, password = token, accountSid?: string) {
      const c = twilio(user, password, accountSid ? { accountSid } : {});
      c.api.baseUrl = `http://127.0.0.1:${server.port}`;
      c.verify.baseUrl = `http://127.0.0.1:${server.port}`;
      return c;
    },
    stop() {
      server.stop(true);
      fake.stop();
    },
  };
}
