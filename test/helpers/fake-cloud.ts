// A local stand-in for the cloud-number provider, speaking the Twilio Messages API wire format:
// form-encoded creates with Basic auth answering 201 JSON, the message list paged as the provider
// pages it (newest first, PageSize default 50, a relative next_page_uri carrying a PageToken, null
// on the last page), error bodies {code, message, more_info, status}, and signed status callbacks.
import { randomBytes } from "node:crypto";
import { twilioSignature } from "../../src/lib/twilio-signature";

export interface FakeMessage {
  sid: string;
  to: string;
  from: string | null;
  body: string;
  status: string;
  statusCallback: string | null;
  dateCreated: number;
  /** Arrival order, to sort messages created in the same millisecond. */
  seq?: number;
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
  /** Creates taken (their message kept) and not yet answered: calls a kill now would cut off after the provider took them. */
  let taken = 0;
  /** Every create request that arrived, in order, whatever it was answered. */
  const creates: Record<string, string>[] = [];
  const lists: URLSearchParams[] = [];
  const script: Scripted[] = [];
  /** Bodies whose create is taken at once but answered only after a delay. */
  const held = new Map<string, number>();
  let seq = 0;
  // Sids are unique across fake instances, as the provider's are across accounts.
  const instance = randomBytes(8).toString("hex");
  const sid = () => `SM${instance}${(++seq).toString(16).padStart(16, "0")}`;
  const listPath = `/2010-04-01/Accounts/${accountSid}/Messages.json`;
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
        return json(200, listPage(url.searchParams));
      }
      if (req.method !== "POST") return error(405, 20004, "Method not allowed");
      if (!req.headers.get("content-type")?.startsWith("application/x-www-form-urlencoded")) return error(400, 20001, "form body expected");
      const form = Object.fromEntries(new URLSearchParams(await req.text()));
      creates.push(form);
      if (!form.To) return error(400, 21604, "A 'To' phone number is required.");
      if (!form.Body) return error(400, 21602, "Message body is required.");
      if (!form.From && !form.MessagingServiceSid) return error(400, 21603, "A 'From' phone number is required.");

      const hold = held.get(form.Body);
      const next: Scripted | undefined = hold !== undefined ? { kind: "slow", ms: hold, keep: true } : script.shift();
      if (next?.kind === "error") return error(next.status, next.code, next.message);
      const newSid = sid();
      const message: FakeMessage = {
        sid: newSid,
        to: form.To,
        from: form.From ?? null,
        body: form.Body,
        status: "queued",
        statusCallback: form.StatusCallback ?? null,
        dateCreated: Date.now(),
        seq,
      };
      if (next?.kind !== "slow" || next.keep) messages.set(message.sid, message);
      const wait = next?.kind === "slow" ? next.ms : (options.latencyMs ?? 0);
      if (wait) {
        taken += 1;
        await Bun.sleep(wait);
        taken -= 1;
      }
      return json(201, {
        sid: message.sid,
        account_sid: accountSid,
        to: message.to,
        from: message.from,
        body: message.body,
        status: "queued",
        num_segments: "1",
      });
    },
  });

  /**
   * One page of the message list, newest first. The PageToken names the last message of the page
   * before, so messages created meanwhile (newer, on top) do not shift the later pages.
   */
  function listPage(q: URLSearchParams) {
    const to = q.get("To");
    const from = q.get("From");
    const pageSize = Math.min(1000, Math.max(1, Number(q.get("PageSize") ?? 50) || 50));
    const page = Math.max(0, Number(q.get("Page") ?? 0) || 0);
    const token = q.get("PageToken");
    let found = [...messages.values()]
      .filter((x) => (!to || x.to === to) && (!from || x.from === from))
      .sort((a, b) => b.dateCreated - a.dateCreated || (b.seq ?? 0) - (a.seq ?? 0));
    if (token?.startsWith("PA")) {
      const after = found.findIndex((x) => x.sid === token.slice(2));
      found = after >= 0 ? found.slice(after + 1) : [];
    }
    const items = found.slice(0, pageSize);
    const base = new URLSearchParams();
    if (to) base.set("To", to);
    if (from) base.set("From", from);
    base.set("PageSize", String(pageSize));
    const uri = (p: number, t?: string) => {
      const u = new URLSearchParams(base);
      u.set("Page", String(p));
      if (t) u.set("PageToken", t);
      return `${listPath}?${u}`;
    };
    const more = found.length > pageSize;
    return {
      messages: items.map((x) => ({
        sid: x.sid,
        account_sid: accountSid,
        to: x.to,
        from: x.from,
        body: x.body,
        status: x.status,
        direction: "outbound-api",
        num_segments: "1",
        date_created: new Date(x.dateCreated).toUTCString(),
        date_updated: new Date(x.dateCreated).toUTCString(),
        date_sent: null,
        uri: `/2010-04-01/Accounts/${accountSid}/Messages/${x.sid}.json`,
      })),
      end: page * pageSize + Math.max(0, items.length - 1),
      first_page_uri: uri(0),
      next_page_uri: more ? uri(page + 1, `PA${items[items.length - 1].sid}`) : null,
      previous_page_uri: page > 0 ? uri(page - 1) : null,
      page,
      page_size: pageSize,
      start: page * pageSize,
      uri: token ? uri(page, token) : uri(page),
    };
  }

  const deliver = options.deliver ?? ((request: Request) => fetch(request));

  return {
    url: `http://127.0.0.1:${server.port}`,
    accountSid,
    authToken,
    messages,
    creates,
    lists,
    /** Creates taken and still waiting for their answer's delay. */
    takenUnanswered: () => taken,
    /** The next create answers with this error. */
    failNext(status: number, code: number | null, message: string) {
      script.push({ kind: "error", status, code, message });
    },
    /** The next create is taken (if `keep`) but answered only after `ms`. */
    slowNext(ms: number, keep = true) {
      script.push({ kind: "slow", ms, keep });
    },
    /** Every create of this body is taken at once but answered only after `ms`. */
    holdBody(body: string, ms: number) {
      held.set(body, ms);
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
      const signature = twilioSignature(opts.signatureOf ?? authToken, message.statusCallback, params);
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
