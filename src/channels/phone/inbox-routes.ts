// POST /v1/api/device/:device_id/inbox/refresh: the workspace asks a paired phone to re-post the
// SMS it received in a period, to recover inbound messages whose webhooks were lost.
import { Elysia, t } from "elysia";
import { declaredAuth } from "../../http/declared-auth";
import { Envelope, envelopeOf, errorResponses, models } from "../../http/envelope";
import { AppError } from "../../core/errors";
import { DAY } from "../../lib/time";
import { DeviceIdParams } from "../../modules/devices/model";
import type { ChannelRouteContext } from "../types";
import { INBOX_EXPORT_SINCE } from "./protocol";
import type { PhoneService } from "./service";

/** The longest period one refresh may cover. */
export const INBOX_REFRESH_MAX_DAYS = 31;

/** ISO 8601 with a date, a time and a zone (Z or ±hh:mm). */
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

const RefreshBody = t.Object({
  since: t.String({ description: "Start of the period, ISO 8601 with a zone", examples: ["2026-01-15T00:00:00.000Z"] }),
  until: t.String({ description: "End of the period, ISO 8601 with a zone; after `since`", examples: ["2026-01-16T00:00:00.000Z"] }),
});

const RefreshResponse = Envelope(
  t.Object({
    device_id: t.Integer(),
    since: t.String({ format: "date-time" }),
    until: t.String({ format: "date-time" }),
    message_types: t.Array(t.String(), { description: "What the phone was asked to re-post: SMS" }),
    requested_at: t.String({ format: "date-time" }),
  }),
);

/** A body field as milliseconds, or a 400 naming it. */
function instant(value: string, field: string): number {
  const at = ISO_INSTANT.test(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(at)) {
    const reason = "must be an ISO 8601 date-time with a zone, e.g. 2026-01-15T00:00:00Z";
    throw new AppError("validation_error", `Invalid body field '${field}': ${reason}`, { field, location: "body", reason });
  }
  return at;
}

export function phoneInboxRoutes(phone: PhoneService, s: ChannelRouteContext) {
  return new Elysia({ prefix: "/v1/api/device", tags: ["Devices"] })
    .use(declaredAuth())
    .use(models)
    .post(
      "/:device_id/inbox/refresh",
      async ({ auth, params, body, set }) => {
        const device = await s.devices.require(auth.workspaceId, params.device_id);
        const since = instant(body.since, "since");
        const until = instant(body.until, "until");
        if (since >= until) {
          throw new AppError("validation_error", "Invalid body field 'until': must be after since", {
            field: "until",
            location: "body",
            reason: "must be after since",
          });
        }
        if (until - since > INBOX_REFRESH_MAX_DAYS * DAY) {
          const reason = `the period may span at most ${INBOX_REFRESH_MAX_DAYS} days`;
          throw new AppError("validation_error", `Invalid body field 'until': ${reason}`, { field: "until", location: "body", reason });
        }
        const asked = await phone.requestInboxExport(device, since, until);
        set.status = 202;
        return envelopeOf(202, "Inbox refresh requested", asked);
      },
      {
        parse: "json",
        params: DeviceIdParams,
        body: RefreshBody,
        response: { 202: RefreshResponse, ...errorResponses(404, 409) },
        auth: "apiKey",
        scope: "devices",
        detail: {
          operationId: "refreshDeviceInbox",
          summary: "Re-post a phone's received SMS",
          description:
            "Asks a paired phone to post again the SMS it received between `since` and `until` (the app's `MessagesExportRequested` event), " +
            "to recover inbound messages whose webhooks never reached Pigeon. Answers 202 at once; the phone re-posts in the background as `sms:received`, " +
            "and every message lands in its thread once: one Pigeon already has (the same phone message id, or the same sender, time and text) changes nothing " +
            "and raises no second `message.received`. The app itself skips messages it already handled (1.65.2 and later), so usually only the missing ones come. " +
            `\`since\` must be before \`until\`, at most ${INBOX_REFRESH_MAX_DAYS} days apart (400 \`validation_error\`). Unknown device: 404. ` +
            `409 \`not_a_phone\` for other kinds, \`app_too_old\` for apps before ${INBOX_EXPORT_SINCE} (or that never named their version), ` +
            "`phone_not_connected` when the phone has no event stream open (the request is not kept for later).",
        },
      },
    );
}
