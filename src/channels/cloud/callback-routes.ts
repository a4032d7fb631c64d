// The provider's status callbacks: POST /v1/callbacks/cloud/:device_id, form-encoded, signed with
// the device's auth token. They move the notification forward (monotonic) and log the reason.
import { Elysia, t } from "elysia";
import { declaredAuth } from "../../http/declared-auth";
import { documented } from "../../http/route-doc";
import { Envelope, models, ok } from "../../http/envelope";
import { AppError } from "../../core/errors";
import { rawBodyOf } from "../../http/foundation";
import { IdParam } from "../../http/validation";
import type { ChannelRouteContext } from "../types";
import type { CloudService } from "./service";
import { verifyTwilioSignature } from "../../lib/twilio-signature";
import { CLOUD_ERROR_REASONS } from "./adapter";
import { cloudConfigOf } from "./config";
import { applyReport } from "../../modules/notifications/reports";

export function cloudCallbackPath(deviceId: number): string {
  return `/v1/callbacks/cloud/${deviceId}`;
}

export function cloudCallbackRoutes(
  cloud: Pick<CloudService, "deviceOf" | "notificationOf">,
  s: Pick<ChannelRouteContext, "config" | "state">,
) {
  return new Elysia({ tags: ["Callbacks"] })
    .use(declaredAuth())
    .use(models)
    .post(
      "/v1/callbacks/cloud/:device_id",
      async ({ request, params }) => {
        const device = await cloud.deviceOf(params.device_id);
        const config = device?.kind === "cloud" ? cloudConfigOf(device.config) : null;
        if (!device || !config) throw new AppError("not_found", `cloud device ${params.device_id} not found`);

        const form = Object.fromEntries(new URLSearchParams(rawBodyOf(request)));
        const path = new URL(request.url).pathname + new URL(request.url).search;
        const url = s.config.publicUrl ? s.config.publicUrl + path : request.url;
        if (!verifyTwilioSignature(config.authToken, url, form, request.headers.get("x-twilio-signature"))) {
          throw new AppError("unauthorized", "Bad or missing X-Twilio-Signature");
        }

        const sid = form.MessageSid ?? form.SmsSid;
        const status = form.MessageStatus ?? form.SmsStatus;
        const n = sid ? await cloud.notificationOf(sid, device.id) : null;
        if (!n || !status) return ok({ handled: false }, "Nothing to update");

        const code = form.ErrorCode || null;
        const detail = `status callback: ${status}${code ? ` (error ${code}: ${CLOUD_ERROR_REASONS[code] ?? form.ErrorMessage ?? "provider error"})` : ""}`;
        let changed = false;
        if (status === "sent") changed = await applyReport(s.state, n.id, { status: "sent", detail });
        else if (status === "delivered" || status === "read") changed = await applyReport(s.state, n.id, { status: "delivered", detail });
        else if (status === "failed" || status === "undelivered") {
          changed = await applyReport(s.state, n.id, {
            status: "failed",
            errorCode: code ?? status,
            reason: code ? (CLOUD_ERROR_REASONS[code] ?? form.ErrorMessage ?? `provider error ${code}`) : `provider reported ${status}`,
            detail,
          });
        } else await s.state.log(n.id, "provider_status", { status: n.status, detail });
        if (!changed && ["sent", "delivered", "read", "failed", "undelivered"].includes(status)) {
          await s.state.log(n.id, "ignored", { status: n.status, detail: `${detail}; status is already ${n.status}` });
        }
        return ok({ handled: changed }, "Status recorded");
      },
      {
        parse: "urlencoded",
        body: t.Object(
          {
            MessageSid: t.Optional(t.String()),
            MessageStatus: t.Optional(t.String({ description: "queued, sending, sent, delivered, read, undelivered, failed" })),
            ErrorCode: t.Optional(t.String()),
            ErrorMessage: t.Optional(t.String()),
          },
          { additionalProperties: true },
        ),
        params: t.Object({ device_id: IdParam("device_id") }),
        response: { 200: Envelope(t.Object({ handled: t.Boolean() })), 401: "Error", 404: "Error" },
        auth: "platform",
        detail: {
          operationId: "receiveCloudCallback",
          ...documented({
            signedBy: {
              name: "X-Twilio-Signature",
              description:
                "The provider's signature over the callback URL and the sorted form fields, keyed with the cloud number's auth token. Missing or wrong: 401.",
            },
          }),
          summary: "Cloud-number status callback",
          description:
            "Called by the cloud-number provider (Twilio Messages API) with `MessageSid`, `MessageStatus` and `ErrorCode`, form-encoded, signed with " +
            "`X-Twilio-Signature`. `sent` → sent, `delivered`/`read` → delivered, `failed`/`undelivered` → failed with the error code and reason. " +
            "Needs no API key; a bad signature is 401 and changes nothing.",
        },
      },
    );
}
