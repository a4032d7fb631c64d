import { Elysia, t } from "elysia";
import { declaredAuth } from "../../http/declared-auth";
import { Envelope, errorResponses, models, ok } from "../../http/envelope";
import { AppError } from "../../core/errors";
import { iso } from "../../lib/time";
import type { Services } from "../../services-type";
import { VERSION } from "../../version";
import { BATCH_DELETE_MAX, BATCH_REGISTER_MAX } from "../devices/model";

export const BULK_SMS_MAX = 100;
export const PAGE_SIZE_MAX = 100;

const Limits = t.Object({
  requests_per_minute: t.Integer(),
  requests_per_day: t.Integer(),
  monthly_sms: t.Integer({ description: "-1 when unlimited" }),
  urls_allowed: t.Boolean(),
  page_size_max: t.Integer(),
  page_size_default: t.Integer(),
  batch_register_max: t.Integer(),
  batch_delete_max: t.Integer(),
  bulk_sms_max: t.Integer(),
  media_max_bytes: t.Object({ image: t.Integer(), video: t.Integer(), document: t.Integer() }),
});

/** What these routes use of the services. */
export type SystemRoutesDeps = Pick<Services, "clock" | "disk" | "rateLimiter" | "system" | "backups">;

const BackupHealth = t.Object(
  {
    dir: t.String(),
    every_hours: t.Number(),
    keep: t.Integer(),
    last_success_at: t.Nullable(t.String({ description: "When the newest backup in the directory was taken" })),
    age_seconds: t.Nullable(t.Integer({ description: "Seconds since then" })),
    last_error: t.Nullable(t.String({ description: "Why the last attempt failed, until one succeeds" })),
  },
  { description: "Scheduled backups (only when PIGEON_BACKUP_DIR is set, on SQLite)" },
);

export function systemRoutes(s: SystemRoutesDeps) {
  return new Elysia({ tags: ["System"] })
    .use(declaredAuth())
    .use(models)
    .get(
      "/health",
      async () => {
        try {
          await s.system.ping();
        } catch {
          throw new AppError("service_unavailable", "Database is not answering");
        }
        const lastFullAt = iso(s.disk.lastFullAt());
        if (await s.disk.stillFull()) {
          throw new AppError("storage_full", "The disk is full: writes are failing", {
            status: "degraded",
            database: "full",
            last_full_at: lastFullAt,
            version: VERSION,
          });
        }
        return ok(
          {
            status: "ok",
            database: "ok",
            version: VERSION,
            time: iso(s.clock.now()),
            last_full_at: lastFullAt,
            ...(s.backups ? { backup: s.backups.status() } : {}),
          },
          "ok",
        );
      },
      {
        response: {
          200: Envelope(
            t.Object({
              status: t.String(),
              database: t.String(),
              version: t.String(),
              time: t.String(),
              last_full_at: t.Nullable(
                t.String({ description: "When writes last failed for a full disk, if ever since the start: history, not the state" }),
              ),
              backup: t.Optional(BackupHealth),
            }),
          ),
          503: "Error",
          507: "Error",
        },
        auth: "public",
        detail: {
          operationId: "getHealth",
          summary: "Health check",
          description:
            '200 when the database answers. 503 `service_unavailable` when it does not; 507 `storage_full` with `data.database: "full"` and `data.last_full_at` from a write that failed for lack of disk space until a write succeeds again: any send, or a small write of the health check\'s own, tried once the failure is 5 s old and the file system shows free space. `last_full_at` stays in the 200 answer as history. With scheduled backups on (`PIGEON_BACKUP_DIR`), `backup` says when the newest was taken and how old it is (a failing schedule keeps the last success and adds `last_error`). Needs no API key.',
        },
      },
    )
    .get(
      "/v1/api/server-info",
      async ({ auth }) => {
        const window = await s.rateLimiter.peek(auth.keyId, auth.plan.requestsPerMinute, auth.plan.requestsPerDay);
        return ok(
          {
            version: VERSION,
            server_time: iso(s.clock.now()),
            sms_length_cap: auth.smsLengthCap,
            plan: auth.plan.code,
            project_id: auth.workspaceId,
            limits: {
              requests_per_minute: auth.plan.requestsPerMinute,
              requests_per_day: auth.plan.requestsPerDay,
              monthly_sms: auth.plan.monthlySmsLimit ?? -1,
              urls_allowed: auth.plan.allowUrls,
              page_size_max: PAGE_SIZE_MAX,
              page_size_default: 20,
              batch_register_max: BATCH_REGISTER_MAX,
              batch_delete_max: BATCH_DELETE_MAX,
              bulk_sms_max: BULK_SMS_MAX,
              media_max_bytes: { image: 5 * 1024 * 1024, video: 16 * 1024 * 1024, document: 100 * 1024 * 1024 },
            },
            rate_limit: { requests_remaining: window.remaining, reset_at: iso(window.resetAt) },
          },
          "Server info",
        );
      },
      {
        response: {
          200: Envelope(
            t.Object({
              version: t.String(),
              server_time: t.String({ format: "date-time" }),
              sms_length_cap: t.Integer({ description: "The account's SMS length cap in characters (default 1600)" }),
              plan: t.String(),
              project_id: t.Integer(),
              limits: Limits,
              rate_limit: t.Object({ requests_remaining: t.Integer(), reset_at: t.String({ format: "date-time" }) }),
            }),
          ),
          ...errorResponses(),
        },
        auth: "apiKey",
        scope: null,
        detail: {
          operationId: "getServerInfo",
          summary: "Server info",
          description: "The account's SMS length cap and the limits in force for this key.",
        },
      },
    );
}
