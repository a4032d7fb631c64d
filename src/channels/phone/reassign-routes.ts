// Moving a paired phone's waiting messages to another phone by hand: for a phone that is lost,
// broken or being retired, without waiting for it to be marked offline.
import { Elysia, t } from "elysia";
import { declaredAuth } from "../../http/declared-auth";
import { Envelope, errorResponses, models, ok } from "../../http/envelope";
import { refuseUnknownFields } from "../../http/validation";
import { DeviceIdParams } from "../../modules/devices/model";
import type { PhoneService } from "./service";

const ReassignBody = t.Object(
  {
    to_device_id: t.Optional(
      t.Nullable(
        t.Integer({
          minimum: 1,
          description: "The online paired phone to move them to; default: the most recently seen other online phone of the workspace",
        }),
      ),
    ),
    include_pulled: t.Optional(
      t.Boolean({
        description:
          "Also move the messages the first phone already downloaded but never confirmed (default false). The app sends whatever it has downloaded, " +
          "so if that phone comes back these may reach their recipients twice.",
      }),
    ),
  },
  { additionalProperties: false, examples: [{ to_device_id: 2 }, { to_device_id: 2, include_pulled: true }] },
);

const ReassignResponse = Envelope(
  t.Object({
    device_id: t.Integer({ description: "The phone the messages were on" }),
    to_device_id: t.Integer({ description: "The phone they are on now" }),
    moved: t.Integer({ description: "How many moved (0 when none were waiting)" }),
    notification_ids: t.Array(t.Integer()),
    pulled_moved: t.Integer({ description: "How many of those moved the first phone had downloaded (only with include_pulled)" }),
    pulled_left: t.Integer({ description: "Messages the first phone downloaded that stay with it (without include_pulled)" }),
    warning: t.Nullable(t.String({ description: "Set when downloaded messages moved: they may arrive twice" })),
  }),
  {
    message: "Messages reassigned",
    data: { device_id: 1, to_device_id: 2, moved: 2, notification_ids: [41, 42], pulled_moved: 0, pulled_left: 1, warning: null },
  },
);

export function reassignRoutes(phone: PhoneService) {
  return new Elysia({ prefix: "/v1/api/device", tags: ["Devices"] })
    .use(declaredAuth())
    .use(models)
    .post(
      "/:device_id/reassign",
      async ({ auth, params, body }) => {
        const result = await phone.reassign(auth.workspaceId, params.device_id, body?.to_device_id ?? null, body?.include_pulled ?? false);
        const left =
          result.pulled_left > 0 ? `; ${result.pulled_left} downloaded by the phone stay with it (include_pulled moves them)` : "";
        return ok(
          result,
          `${result.moved} message(s) moved to device ${result.to_device_id}${left}${result.warning ? `; ${result.warning}` : ""}`,
        );
      },
      {
        parse: "json",
        params: DeviceIdParams,
        body: t.Optional(ReassignBody),
        transform: refuseUnknownFields(ReassignBody),
        response: { 200: ReassignResponse, ...errorResponses(404, 409) },
        auth: "apiKey",
        scope: "devices",
        detail: {
          operationId: "reassignDeviceMessages",
          summary: "Move a phone's waiting messages to another phone",
          description:
            "Moves the pending messages a paired phone has not taken up yet (it never reported them Processed) to another paired phone of the workspace: " +
            "`to_device_id`, or else the most recently seen other online phone. Each gets a new phone id, so a late report from the first phone changes nothing; " +
            "the new phone is told at once. Messages the first phone already took up stay with it, and so do those it downloaded without confirming " +
            "(the app sends whatever it has downloaded, even when it cannot report it), unless `include_pulled` is true: then they move too, are counted in " +
            "`pulled_moved`, and `warning` says they may arrive twice. The same happens by itself, for never-downloaded messages only, for a phone marked offline " +
            "(silent for PIGEON_OFFLINE_AFTER seconds, default 300) when another phone is online; what stays waits for its phone and fails with `device_offline` " +
            "once its ttl passes, or PIGEON_OFFLINE_TTL seconds (default 86400) after it was due without one. " +
            "Errors: 404 `not_found` (device or to_device_id); 400 `invalid_device` (not a paired phone, or the same device), `device_inactive` (to_device_id inactive); " +
            "409 `no_online_device` (to_device_id offline, or no other online phone).",
        },
      },
    );
}
