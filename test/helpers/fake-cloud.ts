// A local stand-in for the cloud-number provider, speaking the Twilio Messages API wire format:
// form-encoded creates with Basic auth answering 201 JSON, the message list, error bodies
// {code, message, more_info, status}, and signed status callbacks.
import { cloudSignature } from "../../src/channels/sms-cloud/adapter";

export interface FakeMessage {
  sid: string;
  to: string;
  from: string | null;
  body: string;
  status: string;
  statusCallback: string | null;
  dateCreated: number;
}

type Scripted =
  | { kind: "error"; status: number; code: number | null; message: string }
  /** Takes the message but answers only after `ms` (longer than the adapter's timeout = cut off). */
  | { kind: "slow"; ms: number; keep: boolean };

export interface FakeCloudOptions {
  accountSid?: string;
  authToken?: string;
  /** Delivers status callbacks; defaults to real HTTP. Tests of the in-process app pass app.handle. */
  deliver?: (request: Request) => Promise<Response>;
  /** Delay before every create answer, for kill-mid-flight tests. */
  latencyMs?: number;
}

export async function startFakeCloud(options: FakeCloudOptions = {}) {
  const accountSid = options.accountSid ?? "AC00000000000000000000000000000001";
  const authToken = options.authToken ?? "fake-auth-token";
  const messages = new Map<string, FakeMessage>();
  /** Every create request that arrived, in order, whatever it was answered. */
  const creates: Record<string, string>[] = [];
  const lists: URLSearchParams[] = [];
  const script: Scripted[] = [];
  let seq = 0;

  const sid = () => `SM${(++seq).toString(16).padStart(32, "0")}`;
  const json = (status: number, body: unknown) => Response.json(body, { status });
  const error = (status: number, code: number | null, message: string) =>
    json(status, { code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status });

  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const url = new URL(req.url);
      const m = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages\.json$/.exec(url.pathname);
      if (!m) return error(404, 20404, "The requested resource was not found");
      const expected = `Basic ${Buffer.from(`${accountSid}:${authToken}`).toString("base64")}`;
      if (m[1] !== accountSid || req.headers.get("authorization") !== expected) return error(401, 20003, "Authenticate");

      if (req.method === "GET") {
        lists.push(url.searchParams);
        const to = url.searchParams.get("To");
        const from = url.searchParams.get("From");
        const found = [...messages.values()]
          .filter((x) => (!to || x.to === to) && (!from || x.from === from))
          .sort((a, b) => b.dateCreated - a.dateCreated)
          .map((x) => ({ sid: x.sid, to: x.to, from: x.from, body: x.body, status: x.status, date_created: new Date(x.dateCreated).toUTCString() }));
        return json(200, { messages: found, next_page_uri: null });
      }
      if (req.method !== "POST") return error(405, 20004, "Method not allowed");
      if (!req.headers.get("content-type")?.startsWith("application/x-www-form-urlencoded")) return error(400, 20001, "form body expected");
      const form = Object.fromEntries(new URLSearchParams(await req.text()));
      creates.push(form);
      if (!form.To) return error(400, 21604, "A 'To' phone number is required.");
      if (!form.Body) return error(400, 21602, "Message body is required.");
      if (!form.From && !form.MessagingServiceSid) return error(400, 21603, "A 'From' phone number is required.");

      const next = script.shift();
      if (next?.kind === "error") return error(next.status, next.code, next.message);
      const message: FakeMessage = {
        sid: sid(),
        to: form.To,
        from: form.From ?? null,
        body: form.Body,
        status: "queued",
        statusCallback: form.StatusCallback ?? null,
        dateCreated: Date.now(),
      };
      if (next?.kind !== "slow" || next.keep) messages.set(message.sid, message);
      const wait = next?.kind === "slow" ? next.ms : (options.latencyMs ?? 0);
      if (wait) await Bun.sleep(wait);
      return json(201, { sid: message.sid, account_sid: accountSid, to: message.to, from: message.from, body: message.body, status: "queued", num_segments: "1" });
    },
  });

  const deliver = options.deliver ?? ((request: Request) => fetch(request));

  return {
    url: `http://127.0.0.1:${server.port}`,
    accountSid,
    authToken,
    messages,
    creates,
    lists,
    /** The next create answers with this error. */
    failNext(status: number, code: number | null, message: string) {
      script.push({ kind: "error", status, code, message });
    },
    /** The next create is taken (if `keep`) but answered only after `ms`. */
    slowNext(ms: number, keep = true) {
      script.push({ kind: "slow", ms, keep });
    },
    /** Posts a signed status callback for a message, as the provider would. */
    async callback(messageSid: string, status: string, extra: Record<string, string> = {}, opts: { signatureOf?: string } = {}) {
      const message = messages.get(messageSid);
      if (!message?.statusCallback) throw new Error(`no status callback for ${messageSid}`);
      message.status = status;
      const params: Record<string, string> = {
        MessageSid: messageSid,
        SmsSid: messageSid,
        AccountSid: accountSid,
        MessageStatus: status,
        SmsStatus: status,
        To: message.to,
        From: message.from ?? "",
        ApiVersion: "2010-04-01",
        ...extra,
      };
      const signature = cloudSignature(opts.signatureOf ?? authToken, message.statusCallback, params);
      return deliver(
        new Request(message.statusCallback, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": signature },
          body: new URLSearchParams(params).toString(),
        }),
      );
    },
    stop() {
      server.stop(true);
    },
  };
}

export type FakeCloud = Awaited<ReturnType<typeof startFakeCloud>>;
