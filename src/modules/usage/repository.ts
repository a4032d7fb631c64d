// How much of its plan an account has used. Shared by the device usage endpoint and, when
// sending, by the free-tier check.
import { and, count, eq, gte, inArray } from "drizzle-orm";
import type { Db } from "../../db/client";
import { notification, workspace } from "../../db/schema";

export function createUsageRepository(db: Db) {
  return {
    /** SMS the account's workspaces accepted since `since`, not counting failed or cancelled ones. */
    accountSmsSince(accountId: number, since: number): number {
      return db
        .select({ n: count() })
        .from(notification)
        .innerJoin(workspace, eq(workspace.id, notification.workspaceId))
        .where(
          and(
            eq(workspace.accountId, accountId),
            eq(notification.deliveryType, "sms"),
            inArray(notification.status, ["pending", "sent", "delivered"]),
            gte(notification.createdAt, since),
          ),
        )
        .get()!.n;
    },
  };
}

export type UsageRepository = ReturnType<typeof createUsageRepository>;
