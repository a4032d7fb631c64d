// The platform's webhooks: the verification handshake, the signature check, and the deliveries:
// inbound messages into threads, message statuses mapped to reports (statuses that arrive before
// the send was recorded wait in a backlog), template status updates.
import { createHmac, timingSafeEqual } from "node:crypto";
import { toE164 } from "../../lib/phone";
import { DAY } from "../../lib/time";
import type { AttemptOutcome } from "../types";
import type { DeviceRow } from "../../modules/devices/model";
import { applyReport } from "../../modules/notifications/reports";
import { recordInbound } from "../../modules/threads/inbound";
import type { Blocking } from "./blocking";
import type { ChatappContext } from "./context";
import { classifyPlatformCode } from "./errors";
import type { TemplateSync } from "./templates";

/** An object of the platform's webhook JSON, read field by field with a check of each value's type. */
// biome-ignore lint/suspicious/noExplicitAny: the platform's JSON, untyped until each field is checked
type WireObject = Record<string, any>;

export function createWebhookIngest(ctx: ChatappContext, blocking: Blocking, sync: TemplateSync) {
  const { storage, clock, devices, threads, state, events, repo } = ctx;

  async function onMessages(value: Record<string, unknown>): Promise<void> {
    const metadata = value.metadata as { phone_number_id?: string } | undefined;
    if (!metadata?.phone_number_id) return;
    const targets: DeviceRow[] = [];
    for (const id of await repo.deviceIdsByPhoneNumberId(metadata.phone_number_id)) {
      const device = await devices.byId(id);
      if (device) targets.push(device);
    }
    const names = new Map(
      ((value.contacts ?? []) as { wa_id?: string; profile?: { name?: string } }[]).map((c) => [c.wa_id, c.profile?.name ?? null]),
    );
    for (const device of targets) {
      await storage.transaction(async () => {
        for (const m of (value.messages ?? []) as WireObject[]) await inbound(device, m, names.get(m.from) ?? null);
        for (const s of (value.statuses ?? []) as WireObject[]) await status(device, s);
      });
    }
  }

  async function inbound(device: DeviceRow, m: WireObject, name: string | null): Promise<void> {
    if (typeof m.from !== "string" || !m.from) return;
    const from = toE164(`+${m.from.replace(/^\+/, "")}`) ?? `+${m.from.replace(/^\+/, "")}`;
    const text: string =
      m.text?.body ??
      m[m.type]?.caption ??
      m.button?.text ??
      m.interactive?.button_reply?.title ??
      m.interactive?.list_reply?.title ??
      `[${m.type ?? "message"}]`;
    const at = Number(m.timestamp) * 1000 || clock.now();
    await recordInbound(
      threads,
      events,
      {
        workspaceId: device.workspaceId,
        channel: "chatapp",
        deviceId: device.id,
        from,
        fromName: name,
        body: text,
        externalId: typeof m.id === "string" ? m.id : null,
        at,
        extra: { type: m.type ?? "text" },
      },
      ctx.onInbound,
    );
  }

  /** One message status: the platform's wire format mapped to a report. */
  async function status(device: DeviceRow, s: WireObject): Promise<void> {
    if (typeof s.id !== "string") return;
    const n = await repo.notificationByWamid(s.id, device.id);
    if (!n) {
      await repo.backlogAdd(device.id, s.id, s, clock.now());
      return;
    }
    const at = Number(s.timestamp) * 1000 || undefined;
    const detail = `platform status: ${s.status}`;
    switch (s.status) {
      case "sent":
        await applyReport(state, n.id, { status: "sent", at, detail });
        return;
      case "delivered":
      case "read":
        await applyReport(state, n.id, { status: "delivered", at, detail });
        return;
      case "failed": {
        const err = (s.errors ?? [])[0] as
          | { code?: number; title?: string; message?: string; error_data?: { details?: string } }
          | undefined;
        const code = typeof err?.code === "number" ? err.code : null;
        const info = code !== null ? classifyPlatformCode(code) : null;
        const reason = `${err?.title ?? info?.title ?? "failed"}${err?.error_data?.details ? `: ${err.error_data.details}` : ""}`;
        await applyReport(state, n.id, {
          status: "failed",
          at,
          errorCode: code !== null ? String(code) : "platform_failed",
          reason,
          detail: `${detail} (${code ?? "?"} ${reason})`,
        });
        if (info?.cls === "block") await blocking.block(device, String(code), reason);
        return;
      }
    }
  }

  return {
    /**
     * After attempts: block a number on an account-level error; unblock it when a send that
     * started after the block succeeds (one already in flight when it was blocked proves nothing).
     * Each number is read once for the lot; the statuses that raced ahead of the accepted ones are
     * taken in one statement and applied now.
     */
    async afterOutcomes(outcomes: readonly AttemptOutcome[]): Promise<void> {
      const fresh = new Map<number, DeviceRow | null>(
        (await devices.byIds([...new Set(outcomes.map((o) => o.device.id))])).map((d) => [d.id, d]),
      );
      for (const { n, device, outcome } of outcomes) {
        const now = fresh.get(device.id);
        if (!now) continue;
        if (outcome.kind === "accepted" && now.blockedAt !== null && (n.dispatchedAt ?? 0) >= now.blockedAt) await blocking.unblock(now);
        else if (outcome.kind === "permanent" && outcome.block) await blocking.block(now, outcome.code, outcome.reason);
        else continue;
        fresh.set(device.id, await devices.byId(device.id));
      }
      const accepted = outcomes.flatMap(({ device, outcome }) =>
        outcome.kind === "accepted" && fresh.get(device.id) ? [{ externalId: outcome.externalId, deviceId: device.id }] : [],
      );
      if (accepted.length === 0) return;
      await storage.transaction(async () => {
        for (const taken of await repo.backlogTakeMany(accepted)) await status(fresh.get(taken.deviceId)!, taken.payload as WireObject);
      });
    },

    /**
     * chatapp:apply-backlog — statuses kept for a message that has been recorded since are taken
     * and applied: on PostgreSQL a status and its message's outcome, in two units at once, can
     * each miss the other (neither had committed when the other read). Taken by DELETE …
     * RETURNING, so the outcome's own take and this one never both apply a status. How many.
     */
    async applyBacklog(): Promise<number> {
      const recorded = await repo.backlogRecorded(500);
      if (recorded.length === 0) return 0;
      const byId = new Map((await devices.byIds([...new Set(recorded.map((r) => r.deviceId))])).map((d) => [d.id, d]));
      let applied = 0;
      await storage.transaction(async () => {
        for (const taken of await repo.backlogTakeMany(recorded)) {
          const device = byId.get(taken.deviceId);
          if (!device) continue;
          await status(device, taken.payload as WireObject);
          applied++;
        }
      });
      return applied;
    },

    /** chatapp:prune-backlog — statuses for message ids never recorded are dropped after a day. */
    pruneBacklog: () => repo.backlogPrune(clock.now() - DAY),

    /** GET /v1/webhooks/chatapp: the platform's verification handshake. */
    verifyHandshake(query: Record<string, string | undefined>): string | null {
      const token = ctx.config.chatapp.verifyToken;
      if (!token || query["hub.mode"] !== "subscribe" || !query["hub.verify_token"]) return null;
      const a = Buffer.from(query["hub.verify_token"]);
      const b = Buffer.from(token);
      return a.length === b.length && timingSafeEqual(a, b) ? (query["hub.challenge"] ?? "") : null;
    },

    /** Checks X-Hub-Signature-256 (HMAC-SHA256 of the raw body with the app secret), in constant time. */
    signatureValid(raw: string, header: string | null): boolean {
      const secret = ctx.config.chatapp.appSecret;
      if (!secret || !header?.startsWith("sha256=")) return false;
      const expected = Buffer.from(createHmac("sha256", secret).update(raw).digest("hex"));
      const given = Buffer.from(header.slice("sha256=".length));
      return expected.length === given.length && timingSafeEqual(expected, given);
    },

    /** Applies one platform webhook delivery: inbound messages, statuses, template status updates. */
    async receive(payload: unknown): Promise<void> {
      const body = payload as {
        object?: string;
        entry?: { id?: string; changes?: { field?: string; value?: Record<string, unknown> }[] }[];
      };
      if (body?.object !== "whatsapp_business_account" || !Array.isArray(body.entry)) return;
      for (const entry of body.entry) {
        for (const change of entry.changes ?? []) {
          const value = change.value ?? {};
          if (change.field === "messages") await onMessages(value);
          else if (change.field === "message_template_status_update") await sync.onTemplateStatus(String(entry.id ?? ""), value);
        }
      }
    },
  };
}
