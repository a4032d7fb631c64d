// Preparing a send: every check that needs no write (the recipient, opt-outs, the route order,
// the text, the schedule and quiet hours, the expiry), then each route's part: its device, its
// form of the text, and the checks its channel adds.
import type { AuthContext } from "../../core/caller";
import { AppError } from "../../core/errors";
import { ROUTE_NAMES, type DeliveryType, type DeviceKind } from "../../core/kinds";
import { parseScheduleTime, requireTimeZone } from "../../core/schedule";
import { needsContact, recipientAllowed, recipientRefused } from "../../core/scopes";
import { toE164, toE164In } from "../../lib/phone";
import { countSegments } from "../../lib/segments";
import { findUrl } from "../../lib/urls";
import { reportedSimNumbers } from "../devices/service";
import type { SafetyMemo } from "../safety/service";
import { parseRoutes } from "../safety/settings";
import { checkVariables } from "../templates/variables";
import { dataMessageOf, dataRefused } from "./data-message";
import type { Content } from "./content";
import { segmentsOf } from "./content";
import type { SendingContext } from "./context";
import type { DeviceChoice } from "./device-choice";
import { TTL_MAX_SECONDS } from "./model";
import { newPrepareCache, PRIORITY_EXPEDITED, type Common, type PrepareCache, type Prepared, type SendInput } from "./types";

/** A schedule_time up to this far behind the clock still counts as "now" (it has whole seconds). */
const PAST_GRACE_MS = 1000;

export function safetyMemo(seen: PrepareCache, auth: AuthContext): SafetyMemo {
  let memo = seen.safety.get(auth.workspaceId);
  if (!memo) {
    memo = { cacheGeneration: auth.cacheGeneration };
    seen.safety.set(auth.workspaceId, memo);
  }
  return memo;
}

/**
 * The instant the message expires, from `ttl` (counted from when it is due) or `valid_until`;
 * null without either. Both at once is ambiguous and refused, as the app's own server does. `now`
 * is the clock's reading, so the rule can be tested alone.
 */
export function expiryOf(input: Pick<SendInput, "ttl" | "validUntil">, scheduleAt: number | null, now: number): number | null {
  const ttl = input.ttl ?? null;
  const raw = typeof input.validUntil === "string" ? input.validUntil.trim() : null;
  if (ttl !== null && raw) {
    throw new AppError("ttl_with_valid_until", "Give either ttl or valid_until, not both", { fields: ["ttl", "valid_until"] });
  }
  const due = scheduleAt ?? now;
  if (ttl !== null) return due + ttl * 1000;
  if (!raw) return null;
  // A bare local time would be read in the server's zone: an instant needs its zone.
  const at = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/i.test(raw) ? Date.parse(raw) : Number.NaN;
  if (Number.isNaN(at)) {
    throw new AppError("invalid_valid_until", `valid_until "${raw}" is not an ISO 8601 instant with a zone, e.g. 2026-12-24T09:00:00Z`, {
      field: "valid_until",
    });
  }
  if (at <= now) {
    throw new AppError("invalid_valid_until", `valid_until ${raw} is in the past`, {
      field: "valid_until",
      valid_until: new Date(at).toISOString(),
    });
  }
  if (at < due) {
    throw new AppError("invalid_valid_until", `valid_until ${raw} is before schedule_time`, {
      field: "valid_until",
      schedule_at: new Date(due).toISOString(),
    });
  }
  if (at - due > TTL_MAX_SECONDS * 1000) {
    throw new AppError("invalid_valid_until", `valid_until ${raw} is more than 30 days after the message is due`, {
      field: "valid_until",
    });
  }
  return at;
}

/** How an end-to-end encrypted send is prepared instead (src/modules/sending/encrypted.ts). */
export type PrepareEncrypted = (auth: AuthContext, input: SendInput, seen: PrepareCache) => Promise<Prepared>;

export function createPreparing(ctx: SendingContext, choice: DeviceChoice, content: Content, prepareEncrypted: PrepareEncrypted) {
  const { deps, CARRIERS, traits, channelChecks } = ctx;
  const { clock, devices, credits } = deps;
  const { chooseDevice, poolChoice } = choice;
  const { resolveTemplate, contentFor, checkLength } = content;

  /** The failover order a send follows: its own `routes`, else the workspace's default for its channel, else none. */
  async function routeOrder(auth: AuthContext, input: SendInput, memo: SafetyMemo): Promise<DeviceKind[] | null> {
    if (input.routes !== undefined && input.routes !== null) {
      const kinds = parseRoutes("routes", input.routes);
      const named = input.deviceId !== undefined && input.deviceId !== null && String(input.deviceId).trim() !== "";
      if (named && /^\d+$/.test(String(input.deviceId).trim())) {
        const device = await devices.get(auth.workspaceId, Number(String(input.deviceId).trim()));
        if (device && !kinds.includes(device.kind)) {
          throw new AppError("invalid_device", `device ${device.id} is a ${device.kind} device, a route this send does not name`, {
            device_id: device.id,
            kind: device.kind,
          });
        }
      }
      return kinds;
    }
    if (input.system || (input.deviceId !== undefined && input.deviceId !== null && String(input.deviceId).trim() !== "")) return null;
    const fallbackOrder = (await deps.safety.settings(auth.workspaceId, memo)).defaultRoutes;
    // A default order applies to the channels it names: a chat-app send keeps its channel under an SMS-only order.
    if (!fallbackOrder?.some((k) => CARRIERS[input.channel].includes(k))) return null;
    return fallbackOrder;
  }

  /**
   * A data SMS's route order: only the one it names, every route of it able to carry a data SMS
   * (a paired phone); the workspace's default order does not apply, since its other routes could
   * not take it. Null when it names none.
   */
  function dataRouteOrder(input: SendInput): DeviceKind[] | null {
    if (input.routes === undefined || input.routes === null) return null;
    const kinds = parseRoutes("routes", input.routes);
    const other = kinds.find((k) => !traits.get(k)?.sendsDataSms);
    if (other !== undefined) throw dataRefused(`the failover order names ${ROUTE_NAMES[other]}`, { route: ROUTE_NAMES[other] });
    return kinds;
  }

  /**
   * Reads what the items of one request will each ask, at once, into `seen`: their recipients'
   * opt-outs (on PostgreSQL a read for them all instead of one an item).
   */
  async function readAhead(auth: AuthContext, inputs: SendInput[], seen: PrepareCache): Promise<void> {
    const phones = inputs.flatMap((input) => {
      const phone = input.system || input.encrypted ? null : toE164(input.recipient);
      return phone ? [phone] : [];
    });
    await deps.safety.readOptOuts(auth.workspaceId, phones, safetyMemo(seen, auth));
  }

  /**
   * Every check that needs no write. Throws the first problem as an AppError. The items of one
   * request pass the same `seen` (newPrepareCache), so they share the reads that cannot differ.
   */
  async function prepare(auth: AuthContext, input: SendInput, seen: PrepareCache = newPrepareCache()): Promise<Prepared> {
    const policy = auth.limits?.recipients;
    if (input.encrypted) {
      // The recipient is ciphertext: a key limited to some recipients cannot send one.
      if (policy && policy.kind !== "anyone") {
        throw new AppError(
          "recipient_not_allowed",
          "This API key may send only to some recipients, and an encrypted send's cannot be checked",
          {
            recipient: null,
          },
        );
      }
      return prepareEncrypted(auth, input, seen);
    }
    const memo = safetyMemo(seen, auth);
    // A number without its country code is read in the workspace's default country, when it has one.
    const recipient =
      toE164(input.recipient) ?? toE164In(input.recipient, (await deps.safety.settings(auth.workspaceId, memo)).defaultCountry);
    if (!recipient) {
      throw new AppError(
        "invalid_phone_number",
        `Invalid phone number "${String(input.recipient)}": recipient_contact must be E.164, e.g. +14155552671 (or national, once the workspace has a default_country)`,
        {
          field: "recipient_contact",
        },
      );
    }
    // The key's recipient policy: every send a key makes comes through here (src/core/scopes.ts).
    if (policy && policy.kind !== "anyone") {
      const tags = needsContact(policy) ? await deps.contactTags(auth.workspaceId, recipient) : null;
      if (!recipientAllowed(policy, recipient, tags)) throw recipientRefused(policy, recipient);
    }
    if (!input.system) {
      const refused = await deps.safety.refusal(auth.workspaceId, recipient, memo);
      if (refused) throw refused;
    }
    // A data SMS is checked first: its payload and port, and that nothing else is its content.
    const dataMessage = dataMessageOf(input);
    const routes = dataMessage ? dataRouteOrder(input) : await routeOrder(auth, input, memo);
    const { template, templateVars, message } = dataMessage
      ? { template: null, templateVars: null, message: "" }
      : await contentFor(auth, input.channel, input.templateId, input.variables, input.message);
    if (routes === null && !dataMessage) checkLength(auth, input.channel, message);
    if (!auth.plan.allowUrls) {
      const url = findUrl(message);
      if (url)
        throw new AppError("urls_not_allowed", `Your plan does not allow URLs in messages (found "${url}"); remove it or upgrade`, { url });
    }
    const chatappTemplateId = input.chatappTemplateId ?? null;
    const fallbackType = ctx.templateFallbackType;
    if (chatappTemplateId !== null && String(chatappTemplateId).trim() !== "" && fallbackType) {
      // Checked now, so a mistake is a 400 today rather than a failure when the route is reached.
      const fallbackTemplate = await resolveTemplate(auth.workspaceId, chatappTemplateId, fallbackType);
      checkVariables(fallbackTemplate.id, fallbackTemplate.variables, fallbackType, input.variables);
    }

    const timezone = input.timezone?.trim() || null;
    if (timezone) requireTimeZone(timezone);
    let scheduleAt: number | null = null;
    if (input.scheduleTime !== undefined && input.scheduleTime !== null && input.scheduleTime !== "") {
      scheduleAt = parseScheduleTime(input.scheduleTime, timezone ?? "UTC");
      if (scheduleAt + PAST_GRACE_MS < clock.now()) {
        throw new AppError("schedule_time_in_past", `schedule_time ${input.scheduleTime} (${timezone ?? "UTC"}) is in the past`, {
          field: "schedule_time",
          schedule_at: new Date(scheduleAt).toISOString(),
        });
      }
      if (scheduleAt <= clock.now()) scheduleAt = null;
    }
    // Quiet hours: a message that would arrive at night waits until they end (urgent ones and
    // the recipient's own transactions excepted).
    let quietHold: Common["quietHold"] = null;
    if (!input.system && input.transactional !== true && (input.priority ?? 0) < PRIORITY_EXPEDITED) {
      quietHold = await deps.safety.quietHold(auth.workspaceId, recipient, scheduleAt ?? clock.now(), memo);
      if (quietHold) scheduleAt = quietHold.until;
    }

    const common: Common = {
      recipient,
      recipientName: input.recipientName?.trim() || null,
      template,
      templateVars,
      message,
      scheduleAt,
      timezone,
      validUntil: expiryOf(input, scheduleAt, clock.now()),
      quietHold,
      fallback: routes !== null && chatappTemplateId !== null ? { chatappTemplateId, variables: input.variables } : null,
      dataMessage,
    };
    if (routes === null) return prepareRoute(auth, input, common, null, null, seen);

    // Failover: the first route that can take it; the ones that cannot at all are skipped.
    const skipped: Prepared["skipped"] = [];
    for (const kind of routes) {
      try {
        return { ...(await prepareRoute(auth, input, common, kind, routes, seen)), skipped };
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        skipped.push({ route: kind, error });
      }
    }
    const first = skipped[0].error;
    throw new AppError(
      first.code,
      `No route can take this message: ${skipped.map((x) => `${ROUTE_NAMES[x.route]}: ${x.error.message}`).join("; ")}`,
      {
        ...first.data,
        routes: skipped.map((x) => ({
          route: ROUTE_NAMES[x.route],
          error_code: x.error.publicCode ?? x.error.code,
          message: x.error.message,
        })),
      },
      first.publicCode,
    );
  }

  /**
   * One route's part of a send: its device, and the text in its channel's form. On a route of
   * another channel than the send's, an SMS route sends the text as it is; a chat-app route sends
   * it freeform while the 24-hour window is open, else the fallback chat-app template.
   */
  async function prepareRoute(
    auth: AuthContext,
    input: SendInput,
    common: Common,
    kind: DeviceKind | null,
    routes: DeviceKind[] | null,
    seen?: PrepareCache,
  ): Promise<Prepared> {
    const channel: DeliveryType = kind === null ? input.channel : traits.get(kind)!.deliveryType;
    let content = { template: common.template, templateVars: common.templateVars, message: common.message };
    if (channel !== input.channel) content = { template: null, templateVars: null, message: common.message };
    const data = common.dataMessage ?? null;
    if (!data) checkLength(auth, channel, content.message);
    const pool = await poolChoice(auth, input, common, channel, kind, data ? 1 : countSegments(content.message).segments, seen?.poolPicks);
    // A data SMS picks among the devices that send one; a device it names (or its pool's member) is checked below.
    const only = data ? (k: DeviceKind) => traits.get(k)?.sendsDataSms === true : undefined;
    const device =
      pool?.device ??
      (await chooseDevice(auth.workspaceId, channel, input.deviceId, common.scheduleAt === null, kind, seen, auth.cacheGeneration, only));
    if (data && !traits.get(device.kind)?.sendsDataSms)
      throw dataRefused(`device ${device.id} is a ${device.kind} device`, { device_id: device.id, kind: device.kind });
    // On a failover send the SIM is the phone's business; other routes leave it out. A pool's member names its own.
    const simNumber = pool ? pool.simNumber : kind === null || traits.get(kind)?.needsPresence ? (input.simNumber ?? null) : null;
    // Only a paired phone has SIMs to choose from; a cloud number would silently send from its own.
    if (simNumber !== null && !traits.get(device.kind)?.needsPresence) {
      throw new AppError("option_not_supported", `sim_number applies to paired phones; device ${device.id} is a ${device.kind} device`, {
        field: "sim_number",
        device_id: device.id,
        kind: device.kind,
      });
    }
    // A phone that told us its SIMs has only those; one that did not (an app before 1.65) is left to choose.
    const sims = simNumber !== null ? reportedSimNumbers(device) : [];
    if (simNumber !== null && sims.length > 0 && !sims.includes(simNumber)) {
      throw new AppError("invalid_sim_number", `Device ${device.id} has no SIM ${simNumber}; its SIMs are ${sims.join(", ")}`, {
        field: "sim_number",
        device_id: device.id,
        sim_numbers: sims,
      });
    }
    const build = (c: typeof content): Prepared => {
      // A data SMS is one PDU: one segment, whatever its payload.
      const segments = data ? 1 : segmentsOf(channel, c.message);
      return {
        channel,
        device,
        recipient: common.recipient,
        recipientName: common.recipientName,
        template: c.template,
        templateVars: c.templateVars,
        message: c.message,
        // Every pool member at a cap: it waits for the first cap to reset.
        scheduleAt: pool?.holdUntil && (common.scheduleAt ?? 0) < pool.holdUntil ? pool.holdUntil : common.scheduleAt,
        timezone: common.timezone,
        segments,
        // Only cloud numbers cost credits: one per segment.
        cost: traits.get(device.kind)?.charges ? segments : 0,
        channelPayload: channel === input.channel ? (input.channelPayload ?? null) : null,
        simNumber,
        priority: input.priority ?? 0,
        hooks: input.hooks ?? 0,
        withDeliveryReport: input.withDeliveryReport ?? true,
        validUntil: common.validUntil,
        routes,
        skipped: [],
        quietHold: common.quietHold,
        fallback: common.fallback,
        poolNote: pool?.note ?? null,
        poolMemberId: pool?.memberId ?? null,
        poolHeld: pool?.holdUntil != null,
        dataMessage: data,
      };
    };
    const runChecks = async (p: Prepared): Promise<Prepared> => {
      for (const check of channelChecks[channel]) {
        const change = await check(
          auth,
          p,
          input.deviceId !== undefined && kind !== null && p.device.kind !== kind ? { ...input, deviceId: null } : input,
        );
        if (change) p = { ...p, ...change };
      }
      return p;
    };
    let prepared: Prepared;
    try {
      prepared = await runChecks(build(content));
    } catch (error) {
      // A refusal its channel answers with the fallback template on a failover route (a closed
      // chat-app window): that template, if the send named one.
      const fallbackRef = common.fallback?.chatappTemplateId;
      if (!(error instanceof AppError) || !ctx.fallsBackOn(channel, error.code) || content.template || !fallbackRef) throw error;
      const fallback = await contentFor(auth, channel, fallbackRef, common.fallback?.variables, null);
      prepared = await runChecks(build(fallback));
    }
    // A route that cannot pay is a route that cannot take it (a later one may); one that is used pays in store().
    if (kind !== null) {
      const short = await credits.shortfall(auth.workspaceId, prepared.cost);
      if (short) throw short;
    }
    return prepared;
  }

  /** prepare, with the sender's stated reason kept for whoever approves it. */
  async function prepareWithReason(auth: AuthContext, input: SendInput, seen?: PrepareCache): Promise<Prepared> {
    const prepared = await prepare(auth, input, seen);
    const reason = input.reason?.trim();
    if (reason) prepared.reason = reason;
    return prepared;
  }

  return { prepare: prepareWithReason, prepareRoute, readAhead };
}

export type Preparing = ReturnType<typeof createPreparing>;
