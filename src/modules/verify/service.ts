// One-time codes (Twilio's Verify, and the same in Pigeon's API): a service says how codes are made
// and sent; a verification sends a random code to a number and approves it when the code comes
// back. Codes are sealed with the server's key, never stored plain: a new verification to the same
// number within the code's life sends the same code again, as Twilio does. A check compares in
// constant time; five wrong ones end it, and so does its expiry. Sends are urgent (the phone's
// expedited priority, outside quiet hours) through the service's pool or the workspace's routing,
// and the message keeps the code only until its channel has taken it: from then on the
// notification, its events and its thread show the code masked. The fraud limits (sends a number
// may get in 10 minutes, sends a country prefix may get in an hour) refuse before anything is sent
// or charged.
import { randomInt, timingSafeEqual } from "node:crypto";
import type { DeliveryType } from "../../core/kinds";
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import type { AuthContext } from "../../core/caller";
import { AppError } from "../../core/errors";
import { toE164 } from "../../lib/phone";
import type { SecretBox } from "../../lib/secrets";
import { MINUTE, HOUR } from "../../lib/time";
import { regionOf } from "../pools/model";
import { NOTIFICATION_HOOKS } from "../notifications/model";
import type { SendingService } from "../sending/service";
import type { SendInput } from "../sending/types";
import type { ServiceFields, ServiceRow, VerificationRow, VerifyRepository } from "./repository";

export const CODE_LENGTHS = { min: 4, max: 10, default: 6 } as const;
export const TTL_SECONDS = { min: 60, max: 86_400, default: 600 } as const;
export const MAX_CHECKS = 5;
/** The window the per-number limit counts sends in. */
export const NUMBER_WINDOW_MS = 10 * MINUTE;
export const DEFAULT_PER_NUMBER = 5;
export const DEFAULT_PREFIX_BUDGET = 100;
const MAX_SERVICES = 25;
/** Sends are kept this long for the limits and the masking (past the longest code life). */
const SENDS_KEPT_MS = 2 * 24 * HOUR;

/** The channels a verification may go by: Twilio's names, and the Pigeon channel each is. */
export const VERIFY_CHANNELS = { sms: "sms", whatsapp: "chatapp" } as const satisfies Record<string, DeliveryType>;
export type VerifyChannel = keyof typeof VERIFY_CHANNELS;

/** A code as the stored text shows it once its channel has taken it. */
export const maskCode = (text: string, code: string) => text.split(code).join("*".repeat(code.length));

export interface VerifyDeps {
  storage: Storage;
  clock: Clock;
  secrets: SecretBox;
  repo: VerifyRepository;
  sending: SendingService;
  log: (message: string, error?: unknown) => void;
  poolExists: (workspaceId: number, id: number) => Promise<boolean>;
  /** A chat-app template of the workspace that may carry a code (approved, in the authentication category; the first such when `id` is null), with its variable names. */
  authTemplate: (workspaceId: number, id: number | null) => Promise<{ id: number; variables: string[] } | null>;
  templateExists: (workspaceId: number, id: number) => Promise<boolean>;
}

/** What a service is made or changed with, in Pigeon's names. */
export interface ServiceInput {
  name?: string;
  code_length?: number;
  ttl_seconds?: number;
  pool_id?: number | null;
  chatapp_template_id?: number | null;
  per_number_limit?: number;
  prefix_hourly_budget?: number;
}

function field(ok: boolean, field: string, message: string) {
  if (!ok) throw new AppError("validation_error", message, { field });
}

export function createVerifyService(deps: VerifyDeps) {
  const { repo, clock, storage, secrets } = deps;

  async function requireService(workspaceId: number, id: number): Promise<ServiceRow> {
    const s = await repo.service(workspaceId, id);
    if (!s) throw new AppError("not_found", `Verify service ${id} not found`, { field: "service_id" });
    return s;
  }

  async function fieldsOf(workspaceId: number, input: ServiceInput, base: ServiceRow | null): Promise<ServiceFields> {
    const name = input.name?.trim() ?? base?.name;
    field(name !== undefined && name.length >= 1 && name.length <= 60, "name", "The service's name must be 1 to 60 characters");
    const codeLength = input.code_length ?? base?.codeLength ?? CODE_LENGTHS.default;
    field(
      Number.isInteger(codeLength) && codeLength >= CODE_LENGTHS.min && codeLength <= CODE_LENGTHS.max,
      "code_length",
      `A code is ${CODE_LENGTHS.min} to ${CODE_LENGTHS.max} digits long`,
    );
    const ttl = input.ttl_seconds ?? base?.ttlSeconds ?? TTL_SECONDS.default;
    field(
      Number.isInteger(ttl) && ttl >= TTL_SECONDS.min && ttl <= TTL_SECONDS.max,
      "ttl_seconds",
      `A code lives ${TTL_SECONDS.min} to ${TTL_SECONDS.max} seconds`,
    );
    const perNumber = input.per_number_limit ?? base?.perNumberLimit ?? DEFAULT_PER_NUMBER;
    field(Number.isInteger(perNumber) && perNumber >= 1 && perNumber <= 100, "per_number_limit", "per_number_limit is 1 to 100");
    const budget = input.prefix_hourly_budget ?? base?.prefixHourlyBudget ?? DEFAULT_PREFIX_BUDGET;
    field(Number.isInteger(budget) && budget >= 1 && budget <= 100_000, "prefix_hourly_budget", "prefix_hourly_budget is 1 to 100000");
    const poolId = input.pool_id !== undefined ? input.pool_id : (base?.poolId ?? null);
    if (poolId !== null && !(await deps.poolExists(workspaceId, poolId)))
      throw new AppError("not_found", `Pool ${poolId} not found`, { field: "pool_id" });
    const templateId = input.chatapp_template_id !== undefined ? input.chatapp_template_id : (base?.chatappTemplateId ?? null);
    if (templateId !== null && !(await deps.templateExists(workspaceId, templateId)))
      throw new AppError("not_found", `Template ${templateId} not found`, { field: "chatapp_template_id" });
    if (templateId !== null && !(await deps.authTemplate(workspaceId, templateId)))
      throw new AppError(
        "validation_error",
        `Template ${templateId} is no approved chat-app template of the authentication category of this workspace`,
        { field: "chatapp_template_id" },
      );
    return {
      name: name!,
      codeLength,
      ttlSeconds: ttl,
      poolId,
      chatappTemplateId: templateId,
      perNumberLimit: perNumber,
      prefixHourlyBudget: budget,
      updatedAt: clock.now(),
    };
  }

  /** A verification as it stands now: a pending one past its life reads (and is stored) expired. */
  async function current(v: VerificationRow): Promise<VerificationRow> {
    if (v.status === "pending" && v.expiresAt <= clock.now()) {
      await repo.setStatus(v.id, "expired", clock.now());
      return { ...v, status: "expired" };
    }
    return v;
  }

  async function requireVerification(workspaceId: number, id: number, serviceId?: number): Promise<VerificationRow> {
    const v = await repo.verification(workspaceId, id);
    if (!v || (serviceId !== undefined && v.serviceId !== serviceId))
      throw new AppError("not_found", `Verification ${id} not found`, { field: "verification_id" });
    return current(v);
  }

  const newCode = (length: number) => Array.from({ length }, () => randomInt(10)).join("");

  /** The text of a code's SMS, as Twilio words it. */
  const smsText = (s: ServiceRow, code: string) => `Your ${s.name} verification code is: ${code}`;

  /**
   * Sends (or sends again) a code to `to`: the limits first, then the message, urgent, through the
   * service's pool. The verification, its send and the message are stored together.
   */
  async function start(auth: AuthContext, serviceId: number, toInput: string, channelName: string) {
    const s = await requireService(auth.workspaceId, serviceId);
    const to = toE164(toInput);
    if (!to) throw new AppError("invalid_phone_number", `The 'To' number ${toInput} is not a valid phone number.`, { field: "to" });
    if (!(channelName in VERIFY_CHANNELS))
      throw new AppError("validation_error", `Channel ${channelName} is not supported: sms or whatsapp`, { field: "channel" });
    const channel = channelName as VerifyChannel;
    const now = clock.now();
    const prefix = regionOf(to)?.country ?? to.slice(0, 2);
    const checkLimits = async () => {
      if ((await repo.sendsToSince(s.id, to, now - NUMBER_WINDOW_MS)) >= s.perNumberLimit)
        throw new AppError(
          "too_many_verifications",
          `Max send attempts reached: at most ${s.perNumberLimit} codes go to a number in 10 minutes`,
          { field: "to", limit: s.perNumberLimit },
        );
      if ((await repo.sendsToPrefixSince(s.id, prefix, now - HOUR)) >= s.prefixHourlyBudget)
        throw new AppError(
          "prefix_blocked",
          `Verifications to ${prefix} numbers are blocked for now: this service's budget of ${s.prefixHourlyBudget} an hour for the prefix is spent`,
          { field: "to", prefix, limit: s.prefixHourlyBudget },
        );
    };
    await checkLimits();
    const existing = await repo.pendingFor(s.id, to).then((v) => (v ? current(v) : null));
    const again = existing?.status === "pending" ? existing : null;
    const code = again ? secrets.open(again.code) : newCode(s.codeLength);
    const input: SendInput = {
      channel: VERIFY_CHANNELS[channel],
      recipient: to,
      priority: 100,
      transactional: true,
      hooks: NOTIFICATION_HOOKS.oneTimeCode,
      // The message must not arrive after the code has expired.
      ttl: Math.max(1, Math.floor(((again?.expiresAt ?? now + s.ttlSeconds * 1000) - now) / 1000)),
      ...(s.poolId !== null && channel === "sms" ? { poolId: s.poolId } : {}),
    };
    if (channel === "whatsapp") {
      const template = await deps.authTemplate(auth.workspaceId, s.chatappTemplateId);
      if (!template)
        throw new AppError(
          "validation_error",
          "The whatsapp channel needs an approved chat-app template of the authentication category: set the service's chatapp_template_id",
          { field: "channel" },
        );
      input.templateId = template.id;
      input.variables = Object.fromEntries(template.variables.map((name) => [name, code]));
    } else {
      input.message = smsText(s, code);
    }
    const prepared = await deps.sending.prepare(auth, input);
    const id = await storage.transaction(async () => {
      // Starts at once (a double click, a script hammering a number) take their turn here: the
      // limits are counted again, and one that finds a verification made meanwhile answers with it
      // and sends nothing (its message would carry another code).
      await repo.lockService(s.id);
      const meanwhile = await repo.pendingFor(s.id, to);
      if (meanwhile && meanwhile.expiresAt > now && meanwhile.id !== again?.id) return meanwhile.id;
      await checkLimits();
      let vid: number;
      if (again) {
        vid = again.id;
        if (again.channel !== channel) await repo.setChannel(vid, channel, now);
      } else {
        vid = await repo.insertVerification({
          serviceId: s.id,
          workspaceId: auth.workspaceId,
          recipient: to,
          channel,
          code: secrets.seal(code),
          status: "pending",
          expiresAt: now + s.ttlSeconds * 1000,
          createdAt: now,
          updatedAt: now,
        });
      }
      await repo.insertSend({ verificationId: vid, serviceId: s.id, recipient: to, prefix, channel, at: now });
      const [result] = await deps.sending.accept(auth, [prepared]);
      if (!result.ok) throw result.error;
      await repo.setSendNotification(vid, result.accepted.notificationId);
      return vid;
    });
    return (await repo.verification(auth.workspaceId, id))!;
  }

  /**
   * Checks a code: by the verification's id, or the number's pending one. Right: approved. Wrong:
   * still pending, one check fewer left; after the fifth, refused. None pending (expired, approved,
   * canceled): not found, as Twilio answers.
   */
  async function check(auth: AuthContext, serviceId: number, by: { to?: string; verificationId?: number }, code: string) {
    const s = await requireService(auth.workspaceId, serviceId);
    let v: VerificationRow | null;
    if (by.verificationId !== undefined) v = await requireVerification(auth.workspaceId, by.verificationId, s.id);
    else {
      const to = toE164(by.to);
      if (!to) throw new AppError("invalid_phone_number", `The 'To' number ${by.to} is not a valid phone number.`, { field: "to" });
      const found = await repo.pendingFor(s.id, to);
      v = found ? await current(found) : null;
    }
    if (!v || v.status !== "pending") throw new AppError("not_found", "No pending verification for this number or id", { field: "code" });
    if (v.checks >= MAX_CHECKS)
      throw new AppError("too_many_checks", `Max check attempts reached: ${MAX_CHECKS} wrong codes end a verification`, {
        verification_id: v.id,
      });
    const right = Buffer.from(secrets.open(v.code));
    const given = Buffer.from(code);
    const matches = right.length === given.length && timingSafeEqual(right, given);
    const now = clock.now();
    const checks = await repo.countCheck(v.id, now);
    if (checks > MAX_CHECKS)
      throw new AppError("too_many_checks", `Max check attempts reached: ${MAX_CHECKS} wrong codes end a verification`, {
        verification_id: v.id,
      });
    if (matches) await repo.setStatus(v.id, "approved", now);
    return { verification: (await repo.verification(auth.workspaceId, v.id))!, valid: matches };
  }

  /** The notifications of `ids` that carry a code, their code masked in every stored text; inside the transition's unit. */
  async function maskTaken(ids: readonly number[]): Promise<void> {
    if (ids.length === 0) return;
    for (const carrier of await repo.codeCarriers(ids)) {
      const row = await repo.notificationText(carrier.notificationId);
      if (!row) continue;
      const code = secrets.open(carrier.code);
      const vars = row.vars === null ? null : (JSON.parse(row.vars) as Record<string, string>);
      const maskedVars = vars && Object.fromEntries(Object.entries(vars).map(([k, val]) => [k, maskCode(val, code)]));
      await repo.mask(carrier.notificationId, maskCode(row.message, code), maskedVars, code, "*".repeat(code.length));
    }
  }

  return {
    requireService,
    requireVerification,
    start,
    check,
    maskTaken,
    sendsOf: (id: number) => repo.sendsOf(id),

    services: (workspaceId: number) => repo.services(workspaceId),
    async createService(workspaceId: number, input: ServiceInput): Promise<ServiceRow> {
      if ((await repo.countServices(workspaceId)) >= MAX_SERVICES)
        throw new AppError("conflict", `A workspace can have at most ${MAX_SERVICES} Verify services`, { limit: MAX_SERVICES });
      const fields = await fieldsOf(workspaceId, input, null);
      const id = await repo.insertService(workspaceId, fields, clock.now());
      return (await repo.service(workspaceId, id))!;
    },
    async updateService(workspaceId: number, id: number, input: ServiceInput): Promise<ServiceRow> {
      const base = await requireService(workspaceId, id);
      await repo.updateService(id, await fieldsOf(workspaceId, input, base));
      return (await repo.service(workspaceId, id))!;
    },
    async removeService(workspaceId: number, id: number): Promise<void> {
      await requireService(workspaceId, id);
      await storage.transaction(() => repo.removeService(id));
    },

    /** Cancels or approves a pending verification by hand. */
    async setStatus(workspaceId: number, id: number, status: "canceled" | "approved", serviceId?: number) {
      const v = await requireVerification(workspaceId, id, serviceId);
      if (v.status !== "pending")
        throw new AppError("not_cancellable", `Verification ${id} is ${v.status}: only a pending one can be ${status}`, {
          field: "status",
        });
      await repo.setStatus(v.id, status, clock.now());
      return (await repo.verification(workspaceId, v.id))!;
    },

    /** The worker's: what no limit or check needs any more. */
    prune: () => repo.prune(clock.now() - SENDS_KEPT_MS, clock.now() - SENDS_KEPT_MS),
  };
}

export type VerifyService = ReturnType<typeof createVerifyService>;
