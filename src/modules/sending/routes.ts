import { TypeCompiler, type TypeCheck } from "@sinclair/typebox/compiler";
import { Elysia } from "elysia";
import type { TObject, TSchema } from "@sinclair/typebox";
import { declaredAuth } from "../../http/declared-auth";
import { documented } from "../../http/route-doc";
import type { Storage } from "../../db/storage";
import { createTurns } from "../../lib/turns";
import type { FastRoute } from "../../http/fast-route";
import type { AuthContext } from "../../core/caller";
import { errorResponses, models, ok } from "../../http/envelope";
import { AppError } from "../../core/errors";
import { describeValidationError, refuseUnknownFields, validationMessage } from "../../http/validation";
import type { IdempotencyStore, Reply, ReplySet } from "../../http/idempotency";
import { bulkReply, overviewReply, previewReply, singleReply } from "./present";
import type { SendingService } from "./service";
import {
  BULK_MAX,
  BulkResponse,
  BulkSendBody,
  OverviewSendBody,
  OverviewSendResponse,
  PreviewResponse,
  SendResponse,
  SendSmsBody,
  SimpleSendBody,
} from "./model";
import { newPrepareCache, type ItemResult, type PrepareCache, type Prepared, type SendInput } from "./types";

/** What the send routes use of the services. */
export interface SendingRouteDeps {
  idempotency: IdempotencyStore;
  sending: SendingService;
  credits: { balance(workspaceId: number): Promise<number> };
  storage: Pick<Storage, "dialect">;
}

type SendSmsFields = typeof SendSmsBody.static;

const IDEMPOTENCY =
  " Send an `Idempotency-Key` header to make retries safe: a repeat with the same key and body within 24 hours returns the first reply " +
  "(with `Idempotent-Replayed: true`) and creates nothing; the same key with another body is 409 `idempotency_key_reuse`.";

const WHEN =
  " The reply's `scheduled_for` says when the message goes out: the schedule_time instant in UTC, or null when it goes out now. " +
  "Fields outside those listed are refused: 400 `validation_error` naming the field. ";

const SEND_ERRORS =
  'Errors: 400 `invalid_phone_number` (message contains "Invalid phone number"), `message_required`, `message_too_long` (names the cap), ' +
  "`content_conflict` (more than one of message, template_id, data_message), `invalid_data_encoding`, `data_message_empty`, `data_message_too_long` (over 133 bytes), `invalid_port`, " +
  "`data_message_unsupported` (a data SMS through a cloud number or a failover order naming one), " +
  "`invalid_template_variables`, `invalid_schedule_time`, `invalid_timezone`, `schedule_time_in_past`, `invalid_valid_until` (not an ISO 8601 instant, in the past, or before schedule_time), " +
  "`ttl_with_valid_until` (both given), `option_not_supported` (sim_number on a cloud number), `invalid_sim_number` (a SIM the phone did not report), `validation_error` (sim_number outside 1-3, priority outside -128..127, ttl outside 1-2592000), " +
  "`no_active_device`, `pool_unavailable` (no member of the pool can send now; each member's reason is listed), `device_offline` " +
  "(the paired phone has not reported for 5 minutes; scheduled sends are accepted and wait for it), `device_inactive`, `invalid_device`; " +
  "404 `not_found` (template or device); 402 `insufficient_credits` (cloud numbers cost one credit per SMS segment), `free_tier_exhausted`; " +
  "403 `urls_not_allowed`. With `encrypted: true`: 400 `invalid_encrypted_value` (a value not in the app's format; for `data_message.data` also a ciphertext over 192 bytes), `encrypted_needs_phone` (a device, route or pool choice that is not a paired phone), " +
  "`encrypted_option_unsupported` (a template, variables, or a plan that forbids links); 403 `encrypted_sends_disabled` (the workspace has not turned on `encrypted_sends`).";

export function toSendInput(body: Partial<SendSmsFields>): SendInput {
  return {
    channel: "sms",
    recipient: body.recipient_contact,
    message: body.message,
    dataMessage: body.data_message,
    templateId: body.template_id,
    variables: body.variables,
    recipientName: body.recipient_name,
    scheduleTime: body.schedule_time,
    timezone: body.timezone,
    deviceId: body.device_id,
    poolId: body.pool_id,
    simNumber: body.sim_number,
    priority: body.priority,
    withDeliveryReport: body.with_delivery_report,
    ttl: body.ttl,
    validUntil: body.valid_until,
    routes: body.routes,
    transactional: body.transactional,
    chatappTemplateId: body.chatapp_template_id,
    encrypted: body.encrypted,
    reason: body.reason,
  };
}

/**
 * A send, presented: under the Idempotency-Key rules (src/http/idempotency), the items are prepared
 * (checks that write nothing), accepted, and the results presented as the reply. The chat-app's
 * send routes use it too.
 */
export function presentSend<B>(
  s: Pick<SendingRouteDeps, "idempotency" | "sending">,
  request: Request,
  set: ReplySet,
  auth: AuthContext,
  route: string,
  body: unknown,
  prepare: (auth: AuthContext) => Promise<(Prepared | AppError)[]>,
  present: (results: ItemResult[]) => Reply<B>,
): Promise<B> {
  const scope = { workspaceId: auth.workspaceId, route, body };
  // Without an Idempotency-Key there is no reply to store beside the rows: the request's items may
  // be stored together with other requests' (sending.acceptTogether).
  if (!s.idempotency.contextOf(request, scope.workspaceId, scope.route, scope.body)) {
    return (async () => {
      const reply = present(await s.sending.acceptTogether(auth, await prepare(auth)));
      set.status = reply.status;
      return reply.body;
    })();
  }
  return s.idempotency.reply(request, set, scope, {
    prepare: () => prepare(auth),
    commit: async (items) => present(await s.sending.accept(auth, items)),
  });
}

/**
 * Items that are not objects make the whole request malformed (a caller who sends numbers or
 * strings has the format wrong, not one message), so they are refused before anything is stored.
 */
function checkBulkItems(messages: unknown[]) {
  const index = messages.findIndex((m) => m === null || typeof m !== "object" || Array.isArray(m));
  if (index < 0) return;
  const field = `messages[${index}]`;
  const reason = "must be an object (a send body)";
  throw new AppError("validation_error", `Invalid body field '${field}': ${reason}`, { field, location: "body", reason });
}

/**
 * Bulk requests prepared and stored at once on SQLite (src/lib/turns.ts); the others wait their
 * turn. With 32 bulks of 100 distinct recipients at once, 4 held RSS at about 178 MB against 215 MB
 * with no limit, at the same rate or better (2: 160 MB, but a third fewer notifications a second, as
 * fewer bulks shared a commit). Not on PostgreSQL: there a bulk waits on round trips, which the
 * others fill; four at a time cut its rate by a third (bench/NOTES.md).
 */
const BULK_AT_ONCE = 4;

/** The send schema a bulk item is checked against, compiled once, when the first bulk request comes. */
let sendBodyCheck: TypeCheck<typeof SendSmsBody> | undefined;

/** Checks one bulk item against the send schema without failing the others. */
async function prepareBulkItem(s: SendingRouteDeps, auth: AuthContext, item: unknown, seen: PrepareCache): Promise<Prepared | AppError> {
  sendBodyCheck ??= TypeCompiler.Compile(SendSmsBody);
  if (!sendBodyCheck.Check(item)) {
    const problem = describeValidationError({ type: "body", valueError: sendBodyCheck.Errors(item).First() });
    return new AppError("validation_error", validationMessage(problem), { field: problem.field, reason: problem.reason });
  }
  try {
    return await s.sending.prepare(auth, toSendInput(item), seen);
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
}

/**
 * A send route, declared once: its path, its body and reply schemas, its entry in the API document
 * and its work. Both the framework's route (the API document, and what the fast path leaves to
 * the framework) and, unless `fast` is false, its fast handler (src/http/fast-route.ts), which
 * serves it in the running server, are made from it.
 */
interface SendRoute<S extends TObject> extends FastRoute<S> {
  /** The schema of its 200 reply. */
  reply: TSchema;
  /** The error statuses its document lists besides those every route has. */
  errors: number[];
  /** Its operation id, its notes for the document (src/http/route-doc.ts), its summary and description. */
  detail: { operationId: string; summary: string; description: string } & Partial<ReturnType<typeof documented>>;
  /** Served by the framework only. */
  fast?: false;
}

/**
 * The SMS send routes, one entry each (sendHandlers is the table; fastSendRoutes and
 * sendingRoutes make the fast handlers and the framework's routes from it).
 */
export function sendHandlers(s: SendingRouteDeps) {
  const kept = handlersOf.get(s);
  if (kept) return kept;
  const made = makeSendHandlers(s);
  handlersOf.set(s, made);
  return made;
}

/** One set of handlers per services object: the framework's declarations and the fast handlers share the bulk turns. */
const handlersOf = new WeakMap<SendingRouteDeps, ReturnType<typeof makeSendHandlers>>();

function makeSendHandlers(s: SendingRouteDeps) {
  const bulkTurn = createTurns(s.storage.dialect === "sqlite" ? BULK_AT_ONCE : Number.POSITIVE_INFINITY);
  const single = (route: string) => (request: Request, auth: AuthContext, body: Partial<SendSmsFields>, set: ReplySet) =>
    presentSend(s, request, set, auth, route, body, async (auth) => [await s.sending.prepare(auth, toSendInput(body))], singleReply);
  return {
    long: {
      path: "/v1/notification/sms/api/send",
      schema: SendSmsBody,
      reply: SendResponse,
      errors: [402, 404, 409],
      detail: {
        operationId: "sendSms",
        ...documented({ idempotent: true }),
        summary: "Send an SMS",
        description:
          "Accepts an SMS for delivery now or at `schedule_time` (in `timezone`, default UTC) and answers at once with the notification id and the final text. " +
          "With `template_id`, `message` is built from the template and `variables`. The notification starts `pending` and moves to `sent`, `delivered` or `failed` " +
          "(see GET /api/notification/:id). " +
          "Send options: `sim_number` (1-3) picks the paired phone's SIM; `priority` (-128..127) orders the phone's queue, and 100 or more (one-time codes) " +
          "skips the per-minute limits and send delays; `with_delivery_report: false` asks for no delivery report (the message ends at `sent`); " +
          "`ttl` (seconds) or `valid_until` (an instant) bounds how long it may wait: not sent by then it becomes `failed` with `expired`, its credits refunded. " +
          "A local time that daylight saving skips is refused; one it repeats means its first occurrence. " +
          '`timezone` takes any IANA name, links such as CET, EST5EDT or US/Eastern included. A missing recipient_contact is 400 `validation_error` saying "recipient_contact is required".' +
          WHEN +
          SEND_ERRORS +
          IDEMPOTENCY,
      },
      handle: single("sms.send"),
    },
    short: {
      path: "/v1/api/sms/send",
      schema: SimpleSendBody,
      reply: SendResponse,
      errors: [402, 404, 409],
      detail: {
        operationId: "sendSmsShort",
        ...documented({ idempotent: true }),
        summary: "Send an SMS (short form)",
        description:
          "The same as POST /notification/sms/api/send, with the same fields (recipient_contact, message, template_id, variables, recipient_name, " +
          "schedule_time, timezone, device_id, sim_number, priority, with_delivery_report, ttl, valid_until), the same checks and the same reply." +
          WHEN +
          SEND_ERRORS +
          IDEMPOTENCY,
      },
      handle: single("api.sms.send"),
    },
    // Not on the fast path: the framework alone serves it.
    preview: {
      path: "/v1/api/sms/preview",
      schema: SendSmsBody,
      reply: PreviewResponse,
      errors: [404],
      fast: false,
      detail: {
        operationId: "previewSms",
        summary: "Preview a send",
        description:
          "Takes any body of POST /notification/sms/api/send and runs every check of the send path, storing and sending nothing. It answers with the final text, " +
          "its encoding (GSM-7 or UCS-2) and the characters that force UCS-2, the segment count, the route and device it would take, the credit cost, " +
          "the quiet-hours hold (`would: hold`, `scheduled_at`) and, when a send would be refused, `would: refuse` with the same `error` (status_id, error_code, message and data) " +
          "the send would answer, e.g. 403 `recipient_opted_out` with `opted_out`. A body that does not fit the schema is 400 `validation_error`, and a template or device " +
          "the workspace does not have is 404 `not_found`, as for a send.",
      },
      handle: async (_request: Request, auth: AuthContext, body: SendSmsFields) => {
        const input = toSendInput(body);
        const text =
          typeof body.message === "string" && (body.template_id === undefined || body.template_id === null) ? body.message : null;
        const result = await s.sending.preview(auth, input);
        // An id the caller cannot see is answered as the send answers it, not described.
        if (result.refusal?.status === 404) throw result.refusal;
        return ok(previewReply(result, text, await s.credits.balance(auth.workspaceId), body.encrypted === true), "Preview");
      },
    },
    bulk: {
      path: "/v1/api/sms/send/bulk",
      schema: BulkSendBody,
      reply: BulkResponse,
      errors: [409],
      detail: {
        operationId: "sendSmsBulk",
        ...documented({ idempotent: true }),
        summary: "Send many SMS",
        description:
          `Up to ${BULK_MAX} send bodies (each with the fields of POST /notification/sms/api/send). Every item is checked on its own: ` +
          "the valid ones are stored even when others fail, and `results` lists, in order, each item's notification or its error " +
          "(`error.status_id`, `error.error_code`, `error.message`), with `scheduled_for` on each stored item. The reply is 200 whenever the list itself is well-formed; " +
          "an item that is not an object (a number, string, null or array) makes the whole request 400 `validation_error` naming it (e.g. `messages[2]`), and nothing is stored. " +
          "An item with a field outside the send fields fails alone, naming the field." +
          IDEMPOTENCY,
      },
      handle: (request: Request, auth: AuthContext, body: typeof BulkSendBody.static, set: ReplySet) =>
        bulkTurn(() =>
          presentSend(
            s,
            request,
            set,
            auth,
            "api.sms.send.bulk",
            body,
            async (auth) => {
              checkBulkItems(body.messages);
              const seen = newPrepareCache();
              const inputs = body.messages.flatMap((item) => (typeof item === "object" && item !== null ? [toSendInput(item)] : []));
              await s.sending.readAhead(auth, inputs, seen);
              const items: (Prepared | AppError)[] = [];
              for (const item of body.messages) items.push(await prepareBulkItem(s, auth, item, seen));
              return items;
            },
            bulkReply,
          ),
        ),
    },
    overview: {
      path: "/v1/sms/send",
      schema: OverviewSendBody,
      reply: OverviewSendResponse,
      errors: [402, 404, 409],
      detail: {
        operationId: "sendSmsOverview",
        ...documented({ idempotent: true }),
        summary: "Send an SMS (overview form)",
        description:
          "The overview's `{to, message}` form: `to` in place of recipient_contact, and every other field of POST /notification/sms/api/send " +
          "(template_id, variables, recipient_name, schedule_time, timezone, device_id, sim_number, priority, with_delivery_report, ttl, valid_until), honoured the same way. Answers the envelope with " +
          "`data: {success, messageId, scheduled_for}`, and `success` and `messageId` repeated at the top level for clients written against the overview. " +
          "`messageId` works with GET /messages/:id." +
          WHEN +
          SEND_ERRORS +
          IDEMPOTENCY,
      },
      handle: (request: Request, auth: AuthContext, body: typeof OverviewSendBody.static, set: ReplySet) =>
        presentSend(
          s,
          request,
          set,
          auth,
          "sms.send.overview",
          body,
          async (auth) => {
            const { to, ...rest } = body;
            return [await s.sending.prepare(auth, toSendInput({ ...rest, recipient_contact: to }))];
          },
          overviewReply,
        ),
    },
  } satisfies Record<string, SendRoute<TObject>>;
}

/** The SMS send routes as fast routes (src/http/fast-route.ts), which serve them in the running server. */
export function fastSendRoutes(s: SendingRouteDeps): FastRoute<TObject>[] {
  return (Object.values(sendHandlers(s)) as SendRoute<TObject>[]).filter((route) => route.fast !== false);
}

/** The SMS send routes for the framework, each made from its one declaration in the table above. */
export function sendingRoutes(s: SendingRouteDeps) {
  const app = new Elysia({ tags: ["Sending"] }).use(declaredAuth()).use(models);
  for (const route of Object.values(sendHandlers(s)) as SendRoute<TObject>[]) {
    app.post(route.path, ({ auth, request, set, body }) => route.handle(request, auth, body, set), {
      parse: "json",
      body: route.schema,
      transform: refuseUnknownFields(route.schema),
      response: { 200: route.reply, ...errorResponses(...route.errors) },
      auth: "apiKey",
      scope: "send",
      detail: route.detail,
    });
  }
  return app;
}
