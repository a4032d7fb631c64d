// The companion app's side of Pigeon (the SMS Gateway for Android app's protocol: docs/phone.md,
// and the app's own source, capcom6/android-sms-gateway), put together:
// pairing (pairing.ts) and the phone's webhooks (phone-webhooks.ts) beside what is here: handing
// phones their messages within their pacing, taking their state reports, their settings, and
// keeping their presence fresh.
import type { ChannelCore } from "../types";
import type { SignInGuard } from "../../http/foundation";
import type { Storage } from "../../db/storage";
import type { Clock } from "../../clock";
import { AppError } from "../../core/errors";
import type { SecretBox } from "../../lib/secrets";
import { iso, MINUTE } from "../../lib/time";
import { nanoid, sha256Hex } from "../../lib/tokens";
import type { DeviceRepository, DeviceRow } from "../../modules/devices/repository";
import { allowedSilence, isOnline, OFFLINE_AFTER_MS } from "../../modules/devices/service";
import type { EventService } from "../../modules/events/service";
import { applyReport } from "../../modules/notifications/reports";
import type { NotificationState } from "../../modules/notifications/state";
import type { InboundHook } from "../../modules/threads/inbound";
import type { ThreadRepository } from "../../modules/threads/repository";
import type { PhoneEventHub } from "./events";
import { createPhonePairing, pairingInfo } from "./pairing";
import { createPhoneWebhooks } from "./phone-webhooks";
import { MAX_MESSAGES, type PhoneRepository } from "./repository";
import { PRIORITY_EXPEDITED } from "../../modules/sending/service";
import { appVersionOf, atLeast, deviceEventData, INBOX_EXPORT_SINCE, isCancelAware, unauthorized, type PatchItem } from "./protocol";

type PhoneState = "Pending" | "Processed" | "Sent" | "Delivered" | "Failed" | "Cancelled" | "Cancelling";

export { appVersionOf, deviceEventData, isCancelAware, PHONE_WEBHOOK_EVENTS, PHONE_WEBHOOK_PATH, type PatchItem } from "./protocol";

export interface PhoneServiceDeps {
  storage: Storage;
  repo: PhoneRepository;
  clock: Clock;
  devices: DeviceRepository;
  state: NotificationState;
  threads: ThreadRepository;
  hub: PhoneEventHub;
  /** Whether another server holds the phone's event stream (several servers on one database). */
  streamElsewhere: (deviceId: number) => Promise<boolean>;
  events: EventService;
  /** What an inbound message goes through before it is announced (the opt-out keywords). */
  onInbound?: InboundHook;
  /** A phone's sender pool's choice of where its waiting messages go when it went offline. */
  rehomeTarget?: ChannelCore["rehomeTarget"];
  /** Seals the phone's signing key and digests one-time codes. */
  secrets: SecretBox;
  /** PIGEON_OFFLINE_AFTER in milliseconds. */
  offlineAfterMs?: number;
  /** How long a message without a ttl may wait on an offline phone that nothing can replace. */
  offlineTtlMs: number;
}

export function createPhoneService(deps: PhoneServiceDeps) {
  const { storage, repo, clock, devices, state, hub, events, secrets } = deps;
  const offlineAfterMs = deps.offlineAfterMs ?? OFFLINE_AFTER_MS;
  const pairing = createPhonePairing(deps);

  let announcedUntil = clock.now();

  /** The device a Bearer device token belongs to; marks it alive. 401 for anything else. */
  async function authenticateDevice(headers: Headers): Promise<DeviceRow> {
    const token = /^Bearer\s+(\S+)$/i.exec(headers.get("authorization") ?? "")?.[1];
    const id = token ? await repo.deviceIdByTokenHash(sha256Hex(token)) : null;
    const device = id !== null ? await devices.byId(id) : null;
    if (!device) throw unauthorized("Unknown or missing device token");
    await markAlive(device, headers);
    return device;
  }

  /** Phone routes that carry a body, keyed "METHOD path"; all but registration need a device token. */
  const BODY_ROUTES = new Set(["PATCH /mobile/v1/device", "PATCH /mobile/v1/message", "PATCH /mobile/v1/user/password"]);

  /**
   * Runs before a phone route's body is read: a caller whose headers cannot be right gets its 401
   * without the body being parsed. Lookups only (nothing marked alive, no code consumed, no
   * password hashed); the route checks the credentials fully afterwards.
   */
  async function checkBeforeBody(method: string, path: string, headers: Headers, signIn: SignInGuard): Promise<void> {
    const route = `${method} ${path.replace(/\/+$/, "")}`;
    // Registration is a sign-in: wrong pairing tokens, logins and codes count against the caller.
    if (route === "POST /mobile/v1/device") {
      await signIn(() => pairing.checkRegistrationHeaders(headers));
      return;
    }
    if (!BODY_ROUTES.has(route)) return;
    const token = /^Bearer\s+(\S+)$/i.exec(headers.get("authorization") ?? "")?.[1];
    if (!token || (await repo.deviceIdByTokenHash(sha256Hex(token))) === null) throw unauthorized("Unknown or missing device token");
  }

  /** Records contact; a phone coming (back) online is announced as device.online. */
  async function markAlive(device: DeviceRow, headers: Headers): Promise<void> {
    await repo.markSeen(device.id, clock.now(), appVersionOf(headers.get("user-agent")));
    if (device.presence !== "online") {
      await storage.transaction(async () => {
        await repo.setPresence(device.id, "online");
        await events.emit(device.workspaceId, "device.online", deviceEventData(device, clock.now()));
      });
    }
  }

  function presentDevice(d: DeviceRow) {
    return {
      id: d.externalId,
      name: d.name,
      createdAt: iso(d.createdAt),
      updatedAt: iso(d.updatedAt),
      lastSeen: iso(d.lastSeenAt ?? d.createdAt),
      ...(d.simCards ? { simCards: d.simCards } : {}),
    };
  }

  async function updateOwnDevice(device: DeviceRow, body: { id?: string; pushToken?: string | null; simCards?: unknown[] }): Promise<void> {
    if (body.id !== undefined && body.id !== device.externalId) throw new AppError("forbidden", "This is not your device");
    // The app sends the token it has now, and its Gson leaves a null out: a PATCH without one is
    // from a phone that has none (it switched to SSE Only).
    const push = body.pushToken ?? null;
    await repo.updateOwnDevice(device.id, push, body.simCards ? JSON.stringify(body.simCards) : null, clock.now());
  }

  /** How many more paced messages the phone may be handed in the current minute. */
  async function budgetLeft(device: DeviceRow, now: number): Promise<number> {
    return device.sendLimitPerMinute - (await repo.handedSince(device.id, now - (now % MINUTE), PRIORITY_EXPEDITED));
  }

  /**
   * The phone's work: due pending messages, at most 100, never more new ones than its per-minute
   * pacing allows (the rest wait for the next minute), plus "Cancelling" items for apps that
   * understand them. Reading changes no state; it only records when each message was first handed
   * out, for the pacing window. Only the rows handed out are read, whatever the backlog behind them.
   */
  async function messagesFor(device: DeviceRow, order: "lifo" | "fifo", userAgent: string | null) {
    const now = clock.now();
    const picked = await storage.transaction(async () => {
      const budget = await budgetLeft(device, now);
      const again = await repo.handedAgain(device.id, now);
      // Expedited messages (one-time codes) skip the budget, as the app skips its own limits.
      const room = MAX_MESSAGES - again.length;
      const expedited = room > 0 ? await repo.waitingFor(device.id, now, PRIORITY_EXPEDITED, "expedited", room) : [];
      const paced = Math.min(budget, room - expedited.length);
      const fresh = [...expedited, ...(paced > 0 ? await repo.waitingFor(device.id, now, PRIORITY_EXPEDITED, "paced", paced) : [])];
      for (const n of fresh) await repo.markHanded(n.id, now);
      return [...again, ...fresh];
    });
    const items: Record<string, unknown>[] = picked.map((n) => ({
      id: n.externalId,
      message: n.message,
      textMessage: { text: n.message },
      phoneNumbers: [n.recipient],
      isEncrypted: false,
      // The app's Message model: simNumber 1-3 or absent (the phone's own choice), validUntil an
      // instant it checks before sending, priority a signed byte.
      ...(n.simNumber !== null ? { simNumber: n.simNumber } : {}),
      withDeliveryReport: Boolean(n.withDeliveryReport),
      priority: n.priority,
      ...(n.validUntil !== null ? { validUntil: iso(n.validUntil) } : {}),
      state: "Pending",
      createdAt: iso(n.createdAt),
    }));
    if (isCancelAware(appVersionOf(userAgent) ?? (await repo.appVersion(device.id)))) {
      for (const n of await repo.cancellingFor(device.id)) {
        items.push({
          id: n.externalId,
          message: n.message,
          textMessage: { text: n.message },
          phoneNumbers: [n.recipient],
          state: "Cancelling",
          createdAt: iso(n.createdAt),
        });
      }
    }
    if (order === "lifo") items.reverse();
    return items.slice(0, MAX_MESSAGES);
  }

  function reasonOf(item: PatchItem): { code: string; reason: string } {
    const error = item.recipients?.find((r) => r.error)?.error ?? null;
    const code = /RESULT_ERROR_[A-Z_]+/.exec(error ?? "")?.[0] ?? (error === "TTL expired" ? "expired" : "carrier_rejected");
    return { code, reason: error ?? "the phone reported the message failed" };
  }

  /** Applies one phone report (PATCH /message item or a status webhook) to its notification. */
  async function applyState(device: DeviceRow, phoneId: string, rawState: string, item: PatchItem, via: string): Promise<void> {
    const n = await repo.byPhoneId(phoneId, device.id);
    if (!n) return;
    const s = (rawState === "Pending" ? "Processed" : rawState) as PhoneState;
    const at = (name: string) => {
      const t = Date.parse(item.states?.[name] ?? "");
      return Number.isNaN(t) ? undefined : t;
    };
    const detail = `${via}: ${s}`;
    switch (s) {
      case "Processed":
        if (await repo.markProcessed(n.id, clock.now()))
          await state.log(n.id, "processed", { status: "pending", detail: `${detail} (the phone has it)`, at: at("Processed") });
        return;
      // What the phone did is the truth, even about a message cancelled while it held it.
      case "Sent":
        await applyReport(state, n.id, { status: "sent", at: at("Sent"), detail }, { overridesCancel: true });
        return;
      case "Delivered":
        await applyReport(state, n.id, { status: "delivered", at: at("Delivered"), sentAt: at("Sent"), detail }, { overridesCancel: true });
        return;
      case "Failed": {
        const { code, reason } = reasonOf(item);
        await applyReport(
          state,
          n.id,
          { status: "failed", at: at("Failed"), errorCode: code, reason, detail: `${detail}: ${reason}` },
          { overridesCancel: true },
        );
        return;
      }
      case "Cancelled":
        if (n.status === "cancelled") {
          if (await repo.clearCancelPending(n.id, clock.now()))
            await state.log(n.id, "cancel_confirmed", { status: "cancelled", detail: `${detail} (the phone dropped it)` });
        } else {
          await applyReport(state, n.id, { status: "cancelled", reason: "cancelled on the phone", detail });
        }
        return;
    }
  }

  async function patchMessages(device: DeviceRow, items: PatchItem[]): Promise<void> {
    await storage.transaction(async () => {
      for (const item of items) await applyState(device, item.id, item.state, item, "phone report");
    });
  }

  /**
   * GET /settings. The app imports each key it is given and resets a key given as null to its own
   * default, while a key left out keeps the phone's own choice (MessagesSettings.import and its
   * siblings). So only the sending settings the user chose in Pigeon are given; SIM selection,
   * processing order, ping and the webhook retry settings stay as the phone has them. Always given:
   * the signing key Pigeon checks webhooks with, and the SSE-only channel, since Pigeon cannot reach
   * a phone through Firebase (the app applies it at its next restart).
   */
  async function settings(device: DeviceRow) {
    let key = device.webhookKey;
    if (!key) {
      key = nanoid(16);
      await repo.setWebhookKeyOnce(device.id, secrets.seal(key));
      key = (await devices.byId(device.id))?.webhookKey ?? key;
    }
    const chosen = new Set(device.userSettings ?? []);
    const messages: Record<string, string | number> = {};
    // Pigeon shows the pause as one range, so choosing either end gives the phone the whole range.
    if (chosen.has("send_interval_min") || chosen.has("send_interval_max")) {
      messages.send_interval_min = device.sendIntervalMin;
      messages.send_interval_max = device.sendIntervalMax;
    }
    if (chosen.has("send_limit_per_minute")) {
      messages.limit_period = "PerMinute";
      messages.limit_value = device.sendLimitPerMinute;
    }
    return {
      ...(Object.keys(messages).length > 0 ? { messages } : {}),
      webhooks: { signing_key: key },
      gateway: { notification_channel: "SSE_ONLY" },
    };
  }

  /**
   * devices:watch-presence — phones silent for 5 minutes (PIGEON_OFFLINE_AFTER), or, when they only
   * poll, for their 15-minute poll interval and 5 minutes more, are announced as device.offline, once.
   */
  async function watchPresence(): Promise<number> {
    const now = clock.now();
    const quiet = await repo.quietSince(now - offlineAfterMs, now - allowedSilence({ pushToken: "polling" }, offlineAfterMs));
    for (const id of quiet) {
      const device = await devices.byId(id);
      if (!device) continue;
      // device.offline once, even if two servers see the phone fall quiet at the same moment.
      await storage.transaction(async () => {
        if (await repo.markOffline(id)) await events.emit(device.workspaceId, "device.offline", deviceEventData(device, now));
      });
    }
    return quiet.length;
  }

  /**
   * Whether telling the phone "there is work" now would get it any: its pacing has room this
   * minute, or an expedited message waits. A phone told while its budget is spent would pull and
   * be handed nothing; announce-due tells it when the next minute starts.
   */
  async function wantsWork(deviceId: number): Promise<boolean> {
    const device = await devices.byId(deviceId);
    if (device?.kind !== "sms") return false;
    const now = clock.now();
    return (await budgetLeft(device, now)) > 0 || (await repo.waitingFor(device.id, now, PRIORITY_EXPEDITED, "expedited", 1)).length > 0;
  }

  /** "There is work" to a phone's event stream, coalesced, and only when it could take some. */
  function announce(deviceId: number) {
    hub.enqueued(deviceId, () => wantsWork(deviceId));
  }

  /** Whether due messages wait on the phone that it was never handed. */
  async function hasWaiting(deviceId: number, now: number): Promise<boolean> {
    return (
      (await repo.waitingFor(deviceId, now, PRIORITY_EXPEDITED, "expedited", 1)).length > 0 ||
      (await repo.waitingFor(deviceId, now, PRIORITY_EXPEDITED, "paced", 1)).length > 0
    );
  }

  /**
   * phones:announce-due — tells phones about work they would otherwise only find on their next
   * poll (15 minutes for the app): scheduled messages that fell due since the last run, and, once
   * a new pacing minute starts, messages the previous minute's per-minute budget held back.
   */
  async function announceDue(): Promise<number> {
    const now = clock.now();
    const since = announcedUntil;
    announcedUntil = now;
    const due = new Set(await repo.devicesDueBetween(since, now));
    const newMinute = Math.floor(now / MINUTE) > Math.floor(since / MINUTE);
    if (newMinute) for (const deviceId of await repo.livePhones()) if (await hasWaiting(deviceId, now)) due.add(deviceId);
    for (const deviceId of due) announce(deviceId);
    return due.size;
  }

  /**
   * An event stream opened. The app only fetches its webhooks and settings when told to (or once a
   * day, or at start — and at sign-up that start-time fetch runs before it is registered and finds
   * nothing), so a phone that has never read them is told to now. If Pigeon's address changed since
   * the phone last read its webhooks (a new PIGEON_PUBLIC_URL), it is told to read them again.
   */
  async function openEvents(device: DeviceRow, baseUrl: string): Promise<ReadableStream<Uint8Array>> {
    const stream = hub.open(device.id);
    // A phone holding a stream is not polling-only, whatever token it registered before.
    if (device.pushToken !== null) await repo.clearPushToken(device.id);
    const served = (device.config as { webhookBase?: string } | null)?.webhookBase;
    if (served !== baseUrl) queueMicrotask(() => hub.notify(device.id, "WebhooksUpdated"));
    // The signing key is handed out with the settings, so no key means they were never read; a
    // phone that has no webhooks served (new, or paired again) has not read them either.
    if (!device.webhookKey || served === undefined) queueMicrotask(() => hub.notify(device.id, "SettingsUpdated"));
    return stream;
  }

  /**
   * Asks a paired phone to re-post the SMS it received between `since` and `until` (its
   * MessagesExportRequested event), to recover messages whose webhooks never reached Pigeon; the
   * re-posted ones Pigeon already has change nothing. 409 when the device is no paired phone, its
   * app is older than 1.28.0 (or never named its version), or it has no event stream open (the
   * event would be lost: it is not kept for a later connection).
   */
  async function requestInboxExport(device: DeviceRow, since: number, until: number) {
    if (device.kind !== "sms") throw new AppError("not_a_phone", `Device ${device.id} is not a paired phone`);
    const version = await repo.appVersion(device.id);
    if (!atLeast(version, INBOX_EXPORT_SINCE)) {
      throw new AppError(
        "app_too_old",
        `The phone's app is ${version ?? "of an unknown version"}; re-posting its inbox needs ${INBOX_EXPORT_SINCE} or later`,
        {
          app_version: version,
        },
      );
    }
    if (!hub.isOpen(device.id) && !(await deps.streamElsewhere(device.id)))
      throw new AppError("phone_not_connected", "The phone has no event stream open; it cannot be asked now");
    // The app reads the data as {since, until, messageTypes, triggerWebhooks}; dates in its Gson
    // pattern (three fraction digits), every value a string like the Go server sends.
    hub.notify(device.id, "MessagesExportRequested", {
      since: iso(since)!,
      until: iso(until)!,
      messageTypes: "SMS",
      triggerWebhooks: "true",
    });
    return { device_id: device.id, since: iso(since)!, until: iso(until)!, message_types: ["SMS"], requested_at: iso(clock.now())! };
  }

  /**
   * Moves the messages a phone has not taken up yet to another phone, each under a new phone id
   * (a late report from the first phone then matches nothing). Only those the first phone never
   * downloaded, unless `includePulled`: the app sends whatever it has downloaded, even with no
   * connection to report it, so a downloaded message moved elsewhere may reach its recipient twice.
   */
  async function moveWaiting(from: DeviceRow, toId: number, why: string, includePulled: boolean, simNumber?: number | null) {
    const now = clock.now();
    const moved: number[] = [];
    let pulledMoved = 0;
    let pulledLeft = 0;
    await storage.transaction(async () => {
      for (const { id, pulled } of await repo.waitingOn(from.id)) {
        if (pulled && !includePulled) {
          pulledLeft++;
          continue;
        }
        if (!(await repo.moveTo(id, from.id, toId, nanoid(21), now, simNumber))) continue;
        const detail = `moved from device ${from.id} to device ${toId}: ${why}${pulled ? ` (device ${from.id} had downloaded it and may still send it)` : ""}`;
        await state.log(id, "reassigned", { status: "pending", detail });
        moved.push(id);
        if (pulled) pulledMoved++;
      }
    });
    if (moved.length > 0) announce(toId);
    return { moved, pulledMoved, pulledLeft };
  }

  /**
   * phones:rehome — messages waiting on a phone marked offline that it never downloaded move to
   * another online phone of the workspace when there is one. What still waits on it (no other
   * phone, or downloaded by it before it went quiet: it may yet send those) fails with
   * device_offline once its time to live passes: its valid_until, or its due time plus the default
   * offline time to live. Nothing stays pending for ever.
   */
  async function rehomeOffline(): Promise<number> {
    const now = clock.now();
    let changed = 0;
    for (const deviceId of await repo.offlineWithWaiting()) {
      const device = await devices.byId(deviceId);
      if (!device) continue;
      // Another member of the phone's sender pool, if it is in one that has a usable phone; else any online phone.
      const pooled = await deps.rehomeTarget?.(device.workspaceId, device.id);
      const target = pooled?.deviceId ?? (await repo.onlinePhoneBesides(device.workspaceId, device.id, now - offlineAfterMs));
      if (target !== null)
        changed += (
          await moveWaiting(
            device,
            target,
            pooled ? "its phone went offline; another member of its sender pool takes it" : "its phone went offline",
            false,
            pooled ? pooled.simNumber : undefined,
          )
        ).moved.length;
      for (const id of await repo.outOfTime(device.id, deps.offlineTtlMs, now)) {
        const failed = await applyReport(state, id, {
          status: "failed",
          errorCode: "device_offline",
          reason: `device ${device.id} stayed offline past the message's time to live, and no other phone took it`,
          detail: "device offline: time to live passed",
        });
        if (failed) changed++;
      }
    }
    return changed;
  }

  /**
   * POST /v1/api/device/:id/reassign — moves a phone's waiting messages by hand, to the phone
   * named or else to the most recently seen online phone of the workspace; those it downloaded
   * only with `includePulled`.
   */
  async function reassign(workspaceId: number, deviceId: number, toDeviceId: number | null, includePulled = false) {
    const from = await devices.get(workspaceId, deviceId);
    if (!from) throw new AppError("not_found", `device ${deviceId} not found`, { field: "device_id" });
    if (from.kind !== "sms") {
      throw new AppError("invalid_device", `device ${from.id} is a ${from.kind} device; only paired phones' messages are reassigned`, {
        device_id: from.id,
        kind: from.kind,
      });
    }
    const now = clock.now();
    let toId: number;
    if (toDeviceId !== null) {
      const to = await devices.get(workspaceId, toDeviceId);
      if (!to) throw new AppError("not_found", `device ${toDeviceId} not found`, { field: "to_device_id" });
      if (to.kind !== "sms")
        throw new AppError("invalid_device", `device ${to.id} is a ${to.kind} device, not a paired phone`, {
          field: "to_device_id",
          device_id: to.id,
          kind: to.kind,
        });
      if (to.id === from.id)
        throw new AppError("invalid_device", "to_device_id is the device the messages are on", { field: "to_device_id", device_id: to.id });
      if (to.status !== "active")
        throw new AppError("device_inactive", `device ${to.id} is inactive`, { field: "to_device_id", device_id: to.id });
      if (!isOnline(to, now, offlineAfterMs)) {
        throw new AppError("no_online_device", `device ${to.id} is offline; messages only move to an online phone`, {
          field: "to_device_id",
          device_id: to.id,
        });
      }
      toId = to.id;
    } else {
      const found = await repo.onlinePhoneBesides(workspaceId, from.id, now - offlineAfterMs);
      if (found === null)
        throw new AppError("no_online_device", "No other online paired phone in this workspace to take the messages", {
          device_id: from.id,
        });
      toId = found;
    }
    const { moved, pulledMoved, pulledLeft } = await moveWaiting(from, toId, "reassigned by hand", includePulled);
    return {
      device_id: from.id,
      to_device_id: toId,
      moved: moved.length,
      notification_ids: moved,
      pulled_moved: pulledMoved,
      pulled_left: pulledLeft,
      warning:
        pulledMoved > 0
          ? `${pulledMoved} of these had been downloaded by device ${from.id}, which may still send them: their recipients may get them twice`
          : null,
    };
  }

  const phoneWebhooks = createPhoneWebhooks({ ...deps, markAlive, applyState });

  return {
    announce,
    announceDue,
    wantsWork,
    rehomeOffline,
    reassign,
    openEvents,
    watchPresence,
    authenticateDevice,
    checkBeforeBody,
    register: pairing.register,
    presentDevice,
    updateOwnDevice,
    messagesFor,
    patchMessages,
    settings,
    webhooks: phoneWebhooks.webhooks,
    oneTimeCode: pairing.oneTimeCode,
    changePassword: pairing.changePassword,
    /** For the CLI's `devices pair-info`. */
    pairingInfo,
    receiveWebhook: phoneWebhooks.receiveWebhook,
    requestInboxExport,
  };
}

export type PhoneService = ReturnType<typeof createPhoneService>;
