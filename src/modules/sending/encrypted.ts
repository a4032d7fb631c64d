// Preparing an end-to-end encrypted SMS (`encrypted: true`): its recipient and text are the
// companion app's ciphertext, which only the paired phone can read. So every check that reads the
// number or the text is one Pigeon cannot make, and each is decided here, in the open: the values
// are checked for their form only; opt-outs, rules, templates, E.164, segments and the recipient's
// zone are not read; what would need them (another route, a template) is refused.
import type { AuthContext } from "../../core/caller";
import { AppError } from "../../core/errors";
import { PHONE_KIND, ROUTE_NAMES } from "../../core/kinds";
import { parseScheduleTime, requireTimeZone } from "../../core/schedule";
import { DATA_SMS_MAX_BASE64, type DataMessage } from "../../lib/data-sms";
import { checkEncrypted, cipherBytesFor } from "../../lib/encrypted";
import { quietUntil } from "../../lib/quiet-hours";
import type { DeviceRow } from "../devices/model";
import type { SafetyMemo } from "../safety/service";
import { parseRoutes } from "../safety/settings";
import type { SendingContext } from "./context";
import { dataFieldOf, dataPortOf, dataRefused, refuseOtherContent } from "./data-message";
import type { DeviceChoice } from "./device-choice";
import { reportedSimNumbers } from "../devices/service";
import { expiryOf } from "./prepare";
import { PRIORITY_EXPEDITED, type PrepareCache, type Prepared, type SendInput } from "./types";

/** The longest plaintext number an encrypted recipient may hold: 63 bytes, so 64 of ciphertext. */
export const RECIPIENT_CIPHER_MAX = cipherBytesFor(63);

/**
 * The most ciphertext an encrypted data SMS may carry: its plaintext is the payload's base64, at
 * most 180 characters for 133 bytes, and PKCS#7 pads 180 bytes to 192 (12 blocks). The same 192
 * hold any plaintext up to 191 bytes, so the base64 broken into lines as Android's or a MIME
 * encoder writes it fits too. Whether the plaintext decodes to 1-133 bytes only the phone can see.
 */
export const DATA_CIPHER_MAX = cipherBytesFor(DATA_SMS_MAX_BASE64);

/** A schedule_time up to this far behind the clock still counts as "now" (as for other sends). */
const PAST_GRACE_MS = 1000;

const unsupported = (field: string, message: string) => new AppError("encrypted_option_unsupported", message, { field });

/** An encrypted value, or 400 invalid_encrypted_value naming the field and why. */
function encryptedValue(value: unknown, field: string, maxCipherBytes: number): string {
  const check = checkEncrypted(value, maxCipherBytes);
  if (!check.ok)
    throw new AppError("invalid_encrypted_value", `${field} is not an encrypted value: ${check.reason}`, { field, reason: check.reason });
  return value as string;
}

/**
 * An encrypted data SMS (`data_message` / SMSGate's `dataMessage` with the encrypted flag): its
 * `data` is one encrypted value whose plaintext is the payload's base64, kept verbatim; its port
 * is not encrypted and is checked as any data SMS's. Null for an encrypted text.
 */
function encryptedDataOf(input: SendInput): DataMessage | null {
  const raw = input.dataMessage;
  if (raw === undefined || raw === null) return null;
  refuseOtherContent(input);
  const field = dataFieldOf(input);
  const data = encryptedValue(raw.data, `${field}.data`, DATA_CIPHER_MAX);
  return { data, port: dataPortOf(raw.port, field) };
}

export function createEncryptedPreparing(
  ctx: SendingContext,
  choice: DeviceChoice,
  memoOf: (seen: PrepareCache, auth: AuthContext) => SafetyMemo,
) {
  const { deps, traits, channelChecks } = ctx;
  const { clock, devices } = deps;
  const isPhone = (device: DeviceRow) => traits.get(device.kind)?.needsPresence === true;

  const needsPhone = (field: string, message: string, extra: Record<string, unknown> = {}) =>
    new AppError("encrypted_needs_phone", `An encrypted message goes only through a paired phone, which decrypts it; ${message}`, {
      field,
      ...extra,
    });

  /** The phone it goes through: the one named, its pool's member, or the first active phone. */
  async function phoneFor(auth: AuthContext, input: SendInput, recipient: string, immediate: boolean, seen: PrepareCache) {
    const named = input.deviceId !== undefined && input.deviceId !== null && String(input.deviceId).trim() !== "";
    if (named) {
      const text = String(input.deviceId).trim();
      const device = /^\d+$/.test(text) ? await devices.get(auth.workspaceId, Number(text)) : null;
      if (device && !isPhone(device))
        throw needsPhone("device_id", `device ${device.id} is a ${device.kind} device`, { device_id: device.id, kind: device.kind });
    }
    const pooled = input.poolId !== undefined && input.poolId !== null;
    if (pooled && named) throw new AppError("validation_error", "Give pool_id or device_id, not both", { field: "pool_id" });
    if (pooled && input.simNumber !== undefined && input.simNumber !== null)
      throw new AppError("validation_error", "sim_number needs device_id: a pool's member names its own SIM", { field: "sim_number" });
    const pool =
      deps.pools && !named && (pooled || input.simNumber === undefined || input.simNumber === null)
        ? await deps.pools.choose(
            auth.workspaceId,
            pooled ? Number(input.poolId) : null,
            recipient,
            immediate,
            auth.cacheGeneration,
            1,
            seen.poolPicks,
            true,
          )
        : null;
    if (pool && !isPhone(pool.device))
      throw needsPhone("pool_id", `pool ${pool.poolId} chose device ${pool.device.id}, a ${pool.device.kind} device`, {
        pool_id: pool.poolId,
        device_id: pool.device.id,
        kind: pool.device.kind,
      });
    const device =
      pool?.device ??
      (await choice.chooseDevice(auth.workspaceId, "sms", input.deviceId, immediate, PHONE_KIND, seen, auth.cacheGeneration));
    return { device, pool };
  }

  /**
   * The encrypted text: one value whose ciphertext the longest text the account may send could
   * need (four UTF-8 bytes a character). A plan that forbids links cannot have one looked for.
   */
  function encryptedText(auth: AuthContext, input: SendInput): string {
    if (input.message === undefined || input.message === null || input.message === "")
      throw new AppError("message_required", "message is required: the encrypted text", { field: "message" });
    const message = encryptedValue(input.message, "message", cipherBytesFor(auth.smsLengthCap * 4));
    if (!auth.plan.allowUrls)
      throw unsupported("message", "Your plan does not allow URLs in messages, and Pigeon cannot look for one in an encrypted text");
    return message;
  }

  /**
   * Every check of an encrypted send that needs no write, in the order of a plain one's; throws the
   * first problem. The workspace must have turned encrypted sends on (403 otherwise).
   */
  async function prepareEncrypted(auth: AuthContext, input: SendInput, seen: PrepareCache): Promise<Prepared> {
    const memo = memoOf(seen, auth);
    const settings = await deps.safety.settings(auth.workspaceId, memo);
    if (!settings.encryptedSends)
      throw new AppError(
        "encrypted_sends_disabled",
        "Encrypted sends are off for this workspace: Pigeon cannot check an encrypted recipient against opt-outs. " +
          "Turn on encrypted_sends (POST /v1/api/workspace/settings, or the dashboard's Safe sending page) once you check opt-outs yourself",
        { setting: "encrypted_sends" },
      );
    if (input.channel !== "sms") throw needsPhone("channel", `a ${input.channel} message cannot be encrypted`);
    const recipient = encryptedValue(input.recipient, "recipient_contact", RECIPIENT_CIPHER_MAX);
    // A data SMS is checked first, as a plain one is: nothing else may be its content.
    const dataMessage = encryptedDataOf(input);
    const template = input.templateId !== undefined && input.templateId !== null && String(input.templateId).trim() !== "";
    if (template)
      throw unsupported(
        "template_id",
        "template_id cannot be used with an encrypted message: Pigeon cannot fill a template into ciphertext",
      );
    if (input.variables !== undefined && input.variables !== null)
      throw unsupported("variables", "variables cannot be used with an encrypted message: there is no template to fill");
    if (input.chatappTemplateId !== undefined && input.chatappTemplateId !== null)
      throw unsupported(
        "chatapp_template_id",
        "chatapp_template_id cannot be used with an encrypted message: it never goes through the chat-app",
      );
    const message = dataMessage ? "" : encryptedText(auth, input);
    if (input.routes !== undefined && input.routes !== null) {
      const other = parseRoutes("routes", input.routes).find((k) => k !== PHONE_KIND);
      if (other)
        throw needsPhone("routes", `routes names ${ROUTE_NAMES[other]}, which would need the text and the number in the clear`, {
          route: ROUTE_NAMES[other],
        });
    }

    const timezone = input.timezone?.trim() || null;
    if (timezone) requireTimeZone(timezone);
    let scheduleAt: number | null = null;
    if (input.scheduleTime !== undefined && input.scheduleTime !== null && input.scheduleTime !== "") {
      scheduleAt = parseScheduleTime(input.scheduleTime, timezone ?? "UTC");
      if (scheduleAt + PAST_GRACE_MS < clock.now())
        throw new AppError("schedule_time_in_past", `schedule_time ${input.scheduleTime} (${timezone ?? "UTC"}) is in the past`, {
          field: "schedule_time",
          schedule_at: new Date(scheduleAt).toISOString(),
        });
      if (scheduleAt <= clock.now()) scheduleAt = null;
    }
    // Quiet hours cannot be read in the recipient's zone (the number is unreadable): they are
    // read in the workspace's own zone instead, and the reply names it.
    let quietHold: Prepared["quietHold"] = null;
    if (settings.quietHours && input.transactional !== true && (input.priority ?? 0) < PRIORITY_EXPEDITED) {
      const until = quietUntil(scheduleAt ?? clock.now(), settings.timeZone, settings.quietHours.start, settings.quietHours.end);
      if (until !== null) {
        quietHold = { until, zone: settings.timeZone };
        scheduleAt = until;
      }
    }
    const validUntil = expiryOf(input, scheduleAt, clock.now());
    const { device, pool } = await phoneFor(auth, input, recipient, scheduleAt === null, seen);
    const simNumber = pool ? pool.simNumber : (input.simNumber ?? null);
    const sims = simNumber !== null && !pool ? reportedSimNumbers(device) : [];
    if (simNumber !== null && sims.length > 0 && !sims.includes(simNumber))
      throw new AppError("invalid_sim_number", `Device ${device.id} has no SIM ${simNumber}; its SIMs are ${sims.join(", ")}`, {
        field: "sim_number",
        device_id: device.id,
        sim_numbers: sims,
      });
    let prepared: Prepared = {
      channel: "sms",
      device,
      recipient,
      recipientName: input.recipientName?.trim() || null,
      template: null,
      templateVars: null,
      message,
      scheduleAt: pool?.holdUntil && (scheduleAt ?? 0) < pool.holdUntil ? pool.holdUntil : scheduleAt,
      timezone,
      // The ciphertext says nothing of the text's length: counted as one (a data SMS is one anyway),
      // and a phone costs no credits.
      segments: 1,
      cost: 0,
      channelPayload: null,
      simNumber,
      priority: input.priority ?? 0,
      hooks: input.hooks ?? 0,
      withDeliveryReport: input.withDeliveryReport ?? true,
      validUntil,
      routes: null,
      skipped: [],
      quietHold,
      fallback: null,
      poolNote: pool?.note ?? null,
      poolMemberId: pool?.memberId ?? null,
      poolHeld: pool?.holdUntil != null,
      encrypted: true,
      dataMessage,
    };
    for (const check of channelChecks.sms) {
      const change = await check(auth, prepared, input);
      if (change) prepared = { ...prepared, ...change };
    }
    if (!isPhone(prepared.device)) throw needsPhone("device_id", `device ${prepared.device.id} is a ${prepared.device.kind} device`);
    if (dataMessage && !traits.get(prepared.device.kind)?.sendsDataSms)
      throw dataRefused(`device ${prepared.device.id} is a ${prepared.device.kind} device`, {
        device_id: prepared.device.id,
        kind: prepared.device.kind,
      });
    return prepared;
  }

  return { prepareEncrypted };
}
