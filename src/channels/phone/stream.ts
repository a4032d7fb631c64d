// A paired phone's event stream: telling it there is work (when it could take some), the events
// it is sent when a stream opens, and asking it to re-post its inbox.
import { AppError } from "../../core/errors";
import { iso, MINUTE } from "../../lib/time";
import type { DeviceRow } from "../../modules/devices/model";
import { PRIORITY_EXPEDITED } from "../../modules/sending/types";
import type { PhoneServiceDeps } from "./context";
import { atLeast, INBOX_EXPORT_SINCE } from "./protocol";
import { PHONE_KIND } from "../../core/kinds";

export function createPhoneStream(deps: PhoneServiceDeps, budgetLeft: (device: DeviceRow, now: number) => Promise<number>) {
  const { repo, clock, devices, hub } = deps;
  let announcedUntil = clock.now();

  /**
   * Whether telling the phone "there is work" now would get it any: its limit has room now, or an
   * expedited message waits. A phone told while its budget is spent would pull and be handed
   * nothing; announce-due tells it at the first minute the limit has room again.
   */
  async function wantsWork(deviceId: number): Promise<boolean> {
    const device = await devices.byId(deviceId);
    if (device?.kind !== PHONE_KIND) return false;
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
   * a new minute starts, messages the limit held back, to each phone whose limit has room again
   * (a per-minute limit at each new minute; a longer one, counted over the period just past, at
   * the first minute after a handed message left that period).
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
    if (device.kind !== PHONE_KIND) throw new AppError("not_a_phone", `Device ${device.id} is not a paired phone`);
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

  return { announce, announceDue, wantsWork, openEvents, requestInboxExport };
}
