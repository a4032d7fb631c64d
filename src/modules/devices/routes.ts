import { Elysia } from "elysia";
import { declaredAuth } from "../../http/declared-auth";
import { documented } from "../../http/route-doc";
import { errorResponses, models, ok } from "../../http/envelope";
import type { Services } from "../../services-type";
import { csv } from "../../lib/csv";
import {
  BATCH_DELETE_MAX,
  BATCH_REGISTER_MAX,
  BatchDeleteBody,
  BatchDeleteResponse,
  BatchRegisterResponse,
  BatchStatusBody,
  BatchStatusResponse,
  DeviceHealthResponse,
  DeviceExportResponse,
  DeviceIdParams,
  DeviceListQuery,
  DeviceListResponse,
  DeviceRateLimitResponse,
  DeviceResponse,
  DeviceStatsResponse,
  DeviceUsageResponse,
  ExportQuery,
  UpdateDeviceBody,
  batchRegisterBody,
} from "./model";

const EXPORT_COLUMNS = [
  "device_id",
  "name",
  "kind",
  "status",
  "phone_number",
  "online",
  "last_sync",
  "blocked",
  "blocked_code",
  "blocked_reason",
  "send_limit_per_minute",
  "send_interval_min",
  "send_interval_max",
  "created_at",
  "updated_at",
] as const;

/** What these routes use of the services. */
export type DeviceRoutesDeps = Pick<Services, "channels" | "clock" | "devices">;

export function deviceRoutes(s: DeviceRoutesDeps) {
  const { devices } = s;
  const BatchRegisterBody = batchRegisterBody(s.channels.flatMap((c) => (c.config ? [c.config] : [])));
  return new Elysia({ prefix: "/v1/api/device", tags: ["Devices"] })
    .use(declaredAuth())
    .use(models)
    .get("/list", async ({ auth, query }) => ok(await devices.list(auth.workspaceId, query), "Devices fetched"), {
      query: DeviceListQuery,
      response: { 200: DeviceListResponse, ...errorResponses() },
      auth: "apiKey",
      scope: "devices",
      detail: {
        operationId: "listDevices",
        summary: "List devices",
        description: "The workspace's devices, oldest first, optionally filtered by status. `limit` is at most 100.",
      },
    })
    .get(
      "/export",
      async ({ auth, query }) => {
        const rows = await devices.exportRows(auth.workspaceId, query.include_inactive ?? false);
        const stamp = new Date(s.clock.now()).toISOString().slice(0, 10);
        if ((query.format ?? "json") === "csv") {
          return new Response(csv(EXPORT_COLUMNS, rows), {
            headers: {
              "content-type": "text/csv; charset=utf-8",
              "content-disposition": `attachment; filename="devices-${stamp}.csv"`,
            },
          });
        }
        return new Response(JSON.stringify(ok({ devices: rows, count: rows.length }, "Devices exported")), {
          headers: {
            "content-type": "application/json; charset=utf-8",
            "content-disposition": `attachment; filename="devices-${stamp}.json"`,
          },
        });
      },
      {
        query: ExportQuery,
        response: { 200: DeviceExportResponse, ...errorResponses() },
        auth: "apiKey",
        scope: "devices",
        detail: {
          operationId: "exportDevices",
          ...documented({
            alsoAs: {
              "text/csv": {
                schema: { type: "string" },
                example:
                  "device_id,name,kind,status,phone_number,online,last_sync,blocked,blocked_code,blocked_reason,send_limit_per_minute,send_interval_min,send_interval_max,created_at,updated_at\n" +
                  "1,Front desk,sms,active,,true,2026-01-15T12:00:00.000Z,false,,,20,1,5,2026-01-15T11:00:00.000Z,2026-01-15T11:00:00.000Z\n",
              },
            },
          }),
          summary: "Export devices",
          description:
            "Every device of the workspace as a download. `format=json` (default) answers the envelope with " +
            "`data.devices` and `data.count`; `format=csv` answers `text/csv` with a header row " +
            `(${EXPORT_COLUMNS.join(", ")}). Both carry a Content-Disposition filename. ` +
            "Inactive devices are left out unless `include_inactive=true`.",
        },
      },
    )
    .post(
      "/batch/register",
      async ({ auth, body }) => ok(await { devices: await devices.register(auth.workspaceId, body.devices) }, "Devices registered"),
      {
        parse: "json",
        body: BatchRegisterBody,
        response: { 200: BatchRegisterResponse, ...errorResponses() },
        auth: "apiKey",
        scope: "devices",
        detail: {
          operationId: "registerDevices",
          summary: "Register devices",
          description:
            `Registers 1 to ${BATCH_REGISTER_MAX} devices at once; every item is checked before any is stored. ` +
            "Each device is `{name, kind?, phone_number?, send_limit_per_minute?}`; kind defaults to `sms` (a paired phone). " +
            "For `sms` devices the reply carries a `device_token`, shown once, that a companion app can use as its Bearer token.",
        },
      },
    )
    .post("/batch/delete", async ({ auth, body }) => ok(await devices.remove(auth.workspaceId, body.device_ids), "Devices deleted"), {
      parse: "json",
      body: BatchDeleteBody,
      response: { 200: BatchDeleteResponse, ...errorResponses(404) },
      auth: "apiKey",
      scope: "devices",
      detail: {
        operationId: "deleteDevices",
        summary: "Delete devices",
        description: `Deletes 1 to ${BATCH_DELETE_MAX} devices. Every id must be one of the workspace's devices, or nothing is deleted (404 listing the unknown ids in \`data.not_found\`).`,
      },
    })
    .post(
      "/batch/update-status",
      async ({ auth, body }) => ok(await devices.setStatus(auth.workspaceId, body.device_ids, body.status), "Device status updated"),
      {
        parse: "json",
        body: BatchStatusBody,
        response: { 200: BatchStatusResponse, ...errorResponses(404) },
        auth: "apiKey",
        scope: "devices",
        detail: {
          operationId: "updateDeviceStatuses",
          summary: "Activate or deactivate devices",
          description:
            "Sets `status` (`active` or `inactive`) on up to 100 devices. Unknown ids: 404 and nothing changes. Inactive devices are never chosen for sending.",
        },
      },
    )
    .post("/update", async ({ auth, body }) => ok(await devices.update(auth.workspaceId, body), "Device updated"), {
      parse: "json",
      body: UpdateDeviceBody,
      response: { 200: DeviceResponse, ...errorResponses(404) },
      auth: "apiKey",
      scope: "devices",
      detail: {
        operationId: "updateDevice",
        summary: "Update a device",
        description:
          "Changes the name and the send pacing: `send_limit_per_minute` (every kind) and, for paired phones, the random pause between two SMS " +
          "(`send_interval_min`..`send_interval_max` seconds). A paired phone is told to fetch its new settings at once; " +
          "it is given only the settings chosen here (the pause range once either end was set, the per-minute limit once set), the rest stay the phone's own. " +
          "`encryption_passphrase` (paired phones) pushes the passphrase of encrypted messages to the phone; it is sealed at rest, never returned " +
          "(`encryption_passphrase_set`), and while Pigeon holds it the encryption is no longer end-to-end against this server.",
      },
    })
    .get(
      "/:device_id",
      async ({ auth, params }) => ok(devices.present(await devices.require(auth.workspaceId, params.device_id)), "Device fetched"),
      {
        params: DeviceIdParams,
        response: { 200: DeviceResponse, ...errorResponses(404) },
        auth: "apiKey",
        scope: "devices",
        detail: {
          operationId: "getDevice",
          summary: "Get a device",
          description:
            "`online` and, for paired phones, `notification_channel`: `sse` (holds the event stream) or `polling` (the app's AUTO channel with a push token: it only polls every 15 minutes, is counted online for that interval and 5 minutes more, and `channel_hint` tells how to switch it to SSE Only).",
        },
      },
    )
    .get("/:device_id/health", async ({ auth, params }) => ok(await devices.health(auth.workspaceId, params.device_id), "Device health"), {
      params: DeviceIdParams,
      response: { 200: DeviceHealthResponse, ...errorResponses(404) },
      auth: "apiKey",
      scope: "devices",
      detail: {
        operationId: "getDeviceHealth",
        summary: "Device health",
        description:
          "`health_score` 0–100: 60 points for contact (all 60 while online, i.e. heard from within 5 minutes, PIGEON_OFFLINE_AFTER; once offline 30, falling to none at 24 hours) " +
          "and 40 for the success rate of the last 7 days' finished notifications. A blocked device scores 0. `last_sync` is the last contact. " +
          "A paired phone that only polls (`notification_channel: polling`: a push token and no event stream, the app's AUTO channel) is judged by its 15-minute poll interval and 5 minutes more; `channel_hint` says how to fix it. " +
          "A paired phone whose app pings (its `system:ping` webhook, every `ping.interval_seconds`) reports its health, shown in `reported`; " +
          "the score is then multiplied by its condition: battery under 15 % and neither charging nor plugged in ×0.5 (under 25 % ×0.8), " +
          "no internet connection ×0.5, the app's failed-messages check `fail` ×0.5 (`warn` ×0.8). " +
          "A phone falling under 15 % off the charger, or losing its connection, is announced once as `device.unhealthy`; its recovery as `device.healthy`.",
      },
    })
    .get("/:device_id/stats", async ({ auth, params }) => ok(await devices.stats(auth.workspaceId, params.device_id), "Device stats"), {
      params: DeviceIdParams,
      response: { 200: DeviceStatsResponse, ...errorResponses(404) },
      auth: "apiKey",
      scope: "devices",
      detail: {
        operationId: "getDeviceStats",
        summary: "Device stats",
        description: "Notifications through this device: `sent` (sent or delivered), `failed`, `pending`.",
      },
    })
    .get("/:device_id/usage", async ({ auth, params }) => ok(await devices.usage(auth, params.device_id), "Device usage"), {
      params: DeviceIdParams,
      response: { 200: DeviceUsageResponse, ...errorResponses(404) },
      auth: "apiKey",
      scope: "devices",
      detail: {
        operationId: "getDeviceUsage",
        summary: "Device usage against the plan",
        description:
          "`used`: SMS this device carried this calendar month (UTC). `limit`: the plan's monthly SMS allowance. " +
          "`remaining`: what the whole account may still send this month. Unlimited plans answer -1 for both and `unlimited: true`.",
      },
    })
    .get(
      "/:device_id/rate-limit",
      async ({ auth, params }) => ok(await devices.rateLimit(auth.workspaceId, params.device_id), "Device rate limit"),
      {
        params: DeviceIdParams,
        response: { 200: DeviceRateLimitResponse, ...errorResponses(404) },
        auth: "apiKey",
        scope: "devices",
        detail: {
          operationId: "getDeviceRateLimit",
          summary: "Device rate-limit status",
          description:
            "The device's send pacing window: it is handed at most `limit` messages per minute; `requests_remaining` are left in the current minute, which ends at `reset_at`. Work over the limit waits for the next window, with no error to the caller.",
        },
      },
    );
}
