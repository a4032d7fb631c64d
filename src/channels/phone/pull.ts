// What a paired phone pulls: its waiting messages, within the limit its user chose (GET
// /mobile/v1/message), and its settings (GET /mobile/v1/settings).
import { iso, MINUTE } from "../../lib/time";
import { nanoid } from "../../lib/tokens";
import { limitOf, PER_30_MINUTES_SINCE, PERIOD_MS, userAppSettings } from "../../modules/devices/app-settings";
import type { DeviceRow } from "../../modules/devices/model";
import type { NotificationRecord } from "../../modules/notifications/model";
import { PRIORITY_EXPEDITED } from "../../modules/sending/types";
import type { PhoneServiceDeps } from "./context";
import { appVersionOf, atLeast, isCancelAware } from "./protocol";
import { MAX_MESSAGES } from "./repository";

/**
 * A message's content as the app reads it (GatewayApi.Message: dataMessage, else textMessage, else
 * the older `message`). A data SMS carries `dataMessage` alone: an app too old to know it finds no
 * content and fails the message, where an empty `message` would have sent an empty text.
 */
function contentOf(n: Pick<NotificationRecord, "message" | "dataMessage">): Record<string, unknown> {
  if (n.dataMessage) return { dataMessage: { data: n.dataMessage.data, port: n.dataMessage.port } };
  return { message: n.message, textMessage: { text: n.message } };
}

export function createPhonePull(deps: PhoneServiceDeps) {
  const { storage, repo, clock, devices, secrets } = deps;

  /**
   * How many more paced messages the phone may be handed now, under the limit the user chose
   * (devices/app-settings.ts limitOf). PerMinute counts the current clock minute, as Pigeon always
   * has. The longer periods count the period just past, as the app counts its own limit
   * (countProcessedFrom(now - duration)): a clock-aligned day would let twice the limit through
   * around midnight, and the phone would then hold the second half for a day. Disabled, or a value
   * of 0 (the app's "no limit"), sets no budget: the phone gets what waits, 100 at a time.
   */
  async function budgetLeft(device: DeviceRow, now: number): Promise<number> {
    const { period, value } = limitOf(device);
    if (period === "Disabled" || value <= 0) return MAX_MESSAGES;
    const since = period === "PerMinute" ? now - (now % MINUTE) : now - PERIOD_MS[period];
    return value - (await repo.handedSince(device.id, since, PRIORITY_EXPEDITED));
  }

  /**
   * The phone's work: due pending messages, at most 100, never more new ones than its limit
   * leaves (budgetLeft; the rest wait until the limit has room again), plus "Cancelling" items for apps that
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
      ...contentOf(n),
      phoneNumbers: [n.recipient],
      // An encrypted message's recipient and text are the ciphertext as given; the phone decrypts them.
      isEncrypted: n.encrypted,
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
          ...contentOf(n),
          phoneNumbers: [n.recipient],
          isEncrypted: n.encrypted,
          state: "Cancelling",
          createdAt: iso(n.createdAt),
        });
      }
    }
    if (order === "lifo") items.reverse();
    return items.slice(0, MAX_MESSAGES);
  }

  /**
   * GET /settings. The app imports each key it is given and resets a key given as null to its own
   * default, while a key left out keeps the phone's own choice (MessagesSettings.import and its
   * siblings). So only what the user set is given (userAppSettings: through Pigeon's device API or
   * SMSGate's /settings), and a Per30Minutes limit not to an app older than 1.67.0. Always given:
   * the signing key Pigeon checks webhooks with, and the SSE-only channel, since Pigeon cannot reach
   * a phone through Firebase (the app applies it at its next restart).
   */
  async function settings(device: DeviceRow, userAgent: string | null = null) {
    let key = device.webhookKey;
    if (!key) {
      key = nanoid(16);
      await repo.setWebhookKeyOnce(device.id, secrets.seal(key));
      key = (await devices.byId(device.id))?.webhookKey ?? key;
    }
    const version = appVersionOf(userAgent) ?? (await repo.appVersion(device.id));
    const set = userAppSettings(device, atLeast(version, PER_30_MINUTES_SINCE));
    // Given only once the user chose it in Pigeon; null then clears the phone's own (the app's default: none).
    const chosen = new Set(device.userSettings ?? []);
    const encryption = chosen.has("encryption_passphrase") ? { encryption: { passphrase: device.encryptionPassphrase } } : {};
    return {
      ...set,
      ...encryption,
      webhooks: { ...set.webhooks, signing_key: key },
      gateway: { notification_channel: "SSE_ONLY" },
    };
  }

  return { budgetLeft, messagesFor, settings };
}
