// The companion app's side of Pigeon (the SMS Gateway for Android app's protocol: docs/phone.md,
// and the app's own source, capcom6/android-sms-gateway), put together from its parts: pairing
// (pairing.ts), what the phone pulls, its messages within their pacing and its settings (pull.ts),
// its event stream (stream.ts), its reports of its messages (reports.ts) and its webhooks
// (phone-webhooks.ts). Here: authenticating phones, keeping their presence fresh, and moving the
// messages that wait on a phone to another.
import type { SignInGuard } from "../../http/foundation";
import { AppError } from "../../core/errors";
import { iso } from "../../lib/time";
import { nanoid, sha256Hex } from "../../lib/tokens";
import type { DeviceRow } from "../../modules/devices/model";
import { allowedSilence, isOnline, OFFLINE_AFTER_MS } from "../../modules/devices/service";
import { applyReport } from "../../modules/notifications/reports";
import type { PhoneServiceDeps } from "./context";
import { createPhonePairing, pairingInfo } from "./pairing";
import { createPhoneWebhooks } from "./phone-webhooks";
import { appVersionOf, deviceEventData, unauthorized } from "./protocol";
import { createPhonePull } from "./pull";
import { createPhoneReports } from "./reports";
import { createPhoneStream } from "./stream";
import { PHONE_KIND } from "../../core/kinds";

export type { PhoneServiceDeps } from "./context";
export { appVersionOf, deviceEventData, isCancelAware, PHONE_WEBHOOK_EVENTS, PHONE_WEBHOOK_PATH, type PatchItem } from "./protocol";

export function createPhoneService(deps: PhoneServiceDeps) {
  const { storage, repo, clock, devices, state, events } = deps;
  const offlineAfterMs = deps.offlineAfterMs ?? OFFLINE_AFTER_MS;
  const pairing = createPhonePairing(deps);
  const pull = createPhonePull(deps);
  const stream = createPhoneStream(deps, pull.budgetLeft);
  const reports = createPhoneReports(deps);
  const { announce } = stream;

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
    if (from.kind !== PHONE_KIND) {
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
      if (to.kind !== PHONE_KIND)
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

  const phoneWebhooks = createPhoneWebhooks({ ...deps, markAlive, applyState: reports.applyState });

  return {
    announce,
    announceDue: stream.announceDue,
    wantsWork: stream.wantsWork,
    rehomeOffline,
    reassign,
    openEvents: stream.openEvents,
    watchPresence,
    authenticateDevice,
    checkBeforeBody,
    register: pairing.register,
    presentDevice,
    updateOwnDevice,
    messagesFor: pull.messagesFor,
    patchMessages: reports.patchMessages,
    settings: pull.settings,
    webhooks: phoneWebhooks.webhooks,
    oneTimeCode: pairing.oneTimeCode,
    changePassword: pairing.changePassword,
    /** For the CLI's `devices pair-info`. */
    pairingInfo,
    receiveWebhook: phoneWebhooks.receiveWebhook,
    requestInboxExport: stream.requestInboxExport,
  };
}

export type PhoneService = ReturnType<typeof createPhoneService>;
