// Sender pools through the API: create, list, get, update and delete. A send names one with
// `pool_id` (or uses the workspace's default pool); the choice of member is the pool service's.
import { Elysia, t } from "elysia";
import { declaredAuth } from "../../http/declared-auth";
import { Envelope, errorResponses, models, ok } from "../../http/envelope";
import { AppError } from "../../core/errors";
import { refuseUnknownFields } from "../../http/validation";
import type { Services } from "../../services-type";

const Member = t.Object(
  {
    device_id: t.Integer({ description: "A paired phone or a cloud number of the workspace" }),
    sim_number: t.Optional(t.Nullable(t.Integer({ description: "One SIM of a paired phone (1-3); omit for the phone's own choice" }))),
    number: t.Optional(
      t.Nullable(
        t.String({
          maxLength: 32,
          description:
            "The number this member sends from, E.164. The companion app does not tell its SIMs' numbers: give it for geomatch. A cloud number knows its own.",
        }),
      ),
    ),
    paused: t.Optional(t.Boolean({ description: "Set aside by you: skipped until set back to false" })),
    resume: t.Optional(t.Boolean({ description: "On update: lift a pause that carrier failures put on this member, now" })),
    daily_limit: t.Optional(t.Nullable(t.Integer({ minimum: 1, description: "Carrier-plan cap: messages (or segments) a UTC day" }))),
    monthly_limit: t.Optional(t.Nullable(t.Integer({ minimum: 1, description: "Carrier-plan cap: messages (or segments) a UTC month" }))),
    count: t.Optional(
      t.Union([t.Literal("messages"), t.Literal("segments")], {
        description: "What the caps count (default messages); with segments a 3-segment SMS counts 3",
      }),
    ),
    monthly_unique_recipients: t.Optional(
      t.Nullable(t.Integer({ minimum: 1, description: "Carrier-plan cap: distinct recipients a UTC month (many prepaid plans have one)" })),
    ),
  },
  { additionalProperties: false },
);

/** Unknown fields are refused, a member's too (the schema alone would drop them without a word). */
function refuseUnknown(schema: { properties: Record<string, unknown> }) {
  const top = refuseUnknownFields(schema);
  const known = new Set(Object.keys(Member.properties));
  return (context: { body: unknown }) => {
    top(context);
    const members = (context.body as { members?: unknown } | null)?.members;
    if (!Array.isArray(members)) return;
    for (const [i, m] of members.entries()) {
      if (m === null || typeof m !== "object" || Array.isArray(m)) continue;
      const extra = Object.keys(m).find((k) => !known.has(k));
      if (extra === undefined) continue;
      const field = `members[${i}].${extra}`;
      throw new AppError("validation_error", `Invalid body field '${field}': is not a known field`, {
        field,
        location: "body",
        reason: "is not a known field",
      });
    }
  };
}

const Strategy = t.Union([t.Literal("sticky"), t.Literal("round_robin"), t.Literal("least_loaded")], {
  description:
    "sticky (default): a recipient keeps the member that last texted them or that they last wrote to, while it can send; a new one gets the least loaded. " +
    "round_robin: each member in turn. least_loaded: the member with the fewest messages waiting.",
});

const poolFields = {
  name: t.String({ minLength: 1, maxLength: 100 }),
  strategy: t.Optional(Strategy),
  geomatch: t.Optional(
    t.Boolean({
      description: "Prefer members whose number shares the recipient's country calling code (and, for +1 numbers, area code)",
    }),
  ),
  is_default: t.Optional(t.Boolean({ description: "Sends that name neither a pool nor a device go through this pool" })),
  members: t.Array(Member, { minItems: 1, maxItems: 50 }),
  failure_threshold: t.Optional(
    t.Integer({ minimum: 1, maximum: 100, description: "Carrier failures in a row after which a member is paused (default 3)" }),
  ),
  failure_backoff_seconds: t.Optional(
    t.Integer({
      minimum: 10,
      maximum: 604800,
      description: "How long a member is paused the first time (default 900); doubled at each pause until a message of it goes out",
    }),
  ),
};

const CreateBody = t.Object(poolFields, {
  additionalProperties: false,
  examples: [
    {
      name: "Shop numbers",
      strategy: "sticky",
      geomatch: true,
      is_default: true,
      members: [{ device_id: 1, sim_number: 1, number: "+14155550100" }, { device_id: 1, sim_number: 2 }, { device_id: 2 }],
    },
  ],
});
const UpdateBody = t.Object(
  {
    pool_id: t.Integer(),
    name: t.Optional(poolFields.name),
    strategy: t.Optional(Strategy),
    geomatch: t.Optional(poolFields.geomatch),
    is_default: t.Optional(poolFields.is_default),
    members: t.Optional(poolFields.members),
    failure_threshold: poolFields.failure_threshold,
    failure_backoff_seconds: poolFields.failure_backoff_seconds,
  },
  { additionalProperties: false, examples: [{ pool_id: 1, strategy: "round_robin" }] },
);
const DeleteBody = t.Object({ pool_id: t.Integer() }, { additionalProperties: false });

const PoolView = t.Object({
  pool_id: t.Integer(),
  messaging_service_sid: t.String({
    pattern: "^MG[0-9a-f]{32}$",
    description: "The pool as Twilio's APIs name it: `MessagingServiceSid` in a Messages request sends through this pool",
    examples: ["MG00000000000000000000000000000001"],
  }),
  name: t.String(),
  strategy: t.String(),
  geomatch: t.Boolean(),
  is_default: t.Boolean(),
  members: t.Array(
    t.Object({
      member_id: t.Integer(),
      device_id: t.Integer(),
      device_name: t.Nullable(t.String()),
      kind: t.Nullable(t.String()),
      sim_number: t.Nullable(t.Integer()),
      number: t.Nullable(t.String()),
      paused: t.Boolean(),
      daily_limit: t.Nullable(t.Integer()),
      monthly_limit: t.Nullable(t.Integer()),
      count: t.String(),
      monthly_unique_recipients: t.Nullable(t.Integer()),
      consecutive_failures: t.Integer({ description: "Carrier failures in a row" }),
      paused_until: t.Nullable(t.String({ format: "date-time", description: "Paused after carrier failures until then" })),
    }),
  ),
  failure_threshold: t.Integer(),
  failure_backoff_seconds: t.Integer(),
  created_at: t.String({ format: "date-time" }),
  updated_at: t.String({ format: "date-time" }),
});

/** What these routes use of the services. */
export type PoolRoutesDeps = Pick<Services, "pools">;

export function poolRoutes(s: PoolRoutesDeps) {
  const { pools } = s;
  return new Elysia({ prefix: "/v1/api/pool", tags: ["Pools"] })
    .use(declaredAuth())
    .use(models)
    .post("/create", async ({ auth, body }) => ok(await pools.create(auth.workspaceId, body), "Pool created"), {
      parse: "json",
      body: CreateBody,
      transform: refuseUnknown(CreateBody),
      response: { 200: Envelope(PoolView), ...errorResponses(404, 409) },
      auth: "apiKey",
      scope: "admin",
      detail: {
        operationId: "createPool",
        summary: "Create a sender pool",
        description:
          "A pool of devices an SMS may go out through: paired phones (or one SIM of a phone) and cloud numbers. A send names it with `pool_id`, or " +
          "goes through the workspace's default pool (`is_default`) when it names neither a pool nor a device. Each send's log says which member " +
          "took it and why the others were skipped (paused, inactive, blocked, or a phone offline for a send for now). " +
          "Errors: 400 `validation_error`, `invalid_device` (a chat-app number), `option_not_supported` (sim_number on a cloud number), " +
          "`invalid_sim_number`, `invalid_phone_number`; 404 `not_found` (a device); 409 `duplicate_pool` (the name is taken).",
      },
    })
    .get("/list", async ({ auth }) => ok(await pools.list(auth.workspaceId), "Pools fetched"), {
      response: { 200: Envelope(t.Object({ pools: t.Array(PoolView) })), ...errorResponses() },
      auth: "apiKey",
      scope: "admin",
      detail: {
        operationId: "listPools",
        summary: "List sender pools",
        description: "Every pool of the workspace with its members, oldest first.",
      },
    })
    .get("/:pool_id", async ({ auth, params }) => ok(await pools.get(auth.workspaceId, params.pool_id), "Pool fetched"), {
      params: t.Object({ pool_id: t.Integer() }),
      response: { 200: Envelope(PoolView), ...errorResponses(404) },
      auth: "apiKey",
      scope: "admin",
      detail: { operationId: "getPool", summary: "Get a sender pool", description: "One pool with its members." },
    })
    .get("/:pool_id/usage", async ({ auth, params }) => ok(await pools.usage(auth.workspaceId, params.pool_id), "Pool usage fetched"), {
      params: t.Object({ pool_id: t.Integer() }),
      response: {
        200: Envelope(
          t.Object({
            pool_id: t.Integer(),
            day: t.String({ description: "The UTC day counted, YYYY-MM-DD" }),
            month: t.String({ description: "The UTC month counted, YYYY-MM" }),
            day_resets_at: t.String({ format: "date-time" }),
            month_resets_at: t.String({ format: "date-time" }),
            members: t.Array(
              t.Object({
                member_id: t.Integer(),
                device_id: t.Integer(),
                sim_number: t.Nullable(t.Integer()),
                count: t.String(),
                today: t.Object({ messages: t.Integer(), segments: t.Integer(), limit: t.Nullable(t.Integer()) }),
                this_month: t.Object({ messages: t.Integer(), segments: t.Integer(), limit: t.Nullable(t.Integer()) }),
                unique_recipients: t.Object({ count: t.Integer(), limit: t.Nullable(t.Integer()) }),
              }),
            ),
          }),
        ),
        ...errorResponses(404),
      },
      auth: "apiKey",
      scope: "admin",
      detail: {
        operationId: "getPoolUsage",
        summary: "A pool's usage against its caps",
        description:
          "What each member sent today and this month (UTC: the caps reset at midnight UTC and on the first of the month), in messages and " +
          "segments, and its distinct recipients this month, beside its caps. A message counts when it is accepted, in the day it is due.",
      },
    })
    .post(
      "/update",
      async ({ auth, body }) => {
        const { pool_id, ...change } = body;
        return ok(
          await pools.update(auth.workspaceId, pool_id, change, { type: "api_key", key_id: auth.keyId, key_name: auth.keyName }),
          "Pool updated",
        );
      },
      {
        parse: "json",
        body: UpdateBody,
        transform: refuseUnknown(UpdateBody),
        response: { 200: Envelope(PoolView), ...errorResponses(404, 409) },
        auth: "apiKey",
        scope: "admin",
        detail: {
          operationId: "updatePool",
          summary: "Update a sender pool",
          description:
            "Changes the fields given. `members` replaces the whole list: a member kept (same device and SIM) keeps its recipients; one " +
            "left out loses them, and they choose again at their next message.",
        },
      },
    )
    .post("/delete", async ({ auth, body }) => ok(await pools.remove(auth.workspaceId, body.pool_id), "Pool deleted"), {
      parse: "json",
      body: DeleteBody,
      transform: refuseUnknownFields(DeleteBody),
      response: { 200: Envelope(t.Object({ pool_id: t.Integer(), deleted: t.Boolean() })), ...errorResponses(404) },
      auth: "apiKey",
      scope: "admin",
      detail: {
        operationId: "deletePool",
        summary: "Delete a sender pool",
        description: "Messages already accepted keep the device they were given; later sends naming the pool get 404.",
      },
    });
}
