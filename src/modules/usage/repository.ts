// How much of its plan an account has used. Shared by the device usage endpoint and, when
// sending, by the free-tier check.
import { and, count, eq, gte, inArray, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { notification, workspace } from "../../db/schema";

export function createUsageRepository(db: Db) {
  const smsSince = db
    .select({ n: count() })
    .from(notification)
    .innerJoin(workspace, eq(workspace.id, notification.workspaceId))
    .where(
      and(
        eq(workspace.accountId, sql.placeholder("account")),
        eq(notification.deliveryType, "sms"),
        inArray(notification.status, ["pending", "sent", "delivered"]),
        gte(notification.createdAt, sql.placeholder("since")),
      ),
    )
    .prepare();

  return {
    /** SMS the account's workspaces accepted since `since`, not counting failed or cancelled ones. */
    accountSmsSince(accountId: number, since: number): number {
      return smsSince.get({ account: accountId, since })!.n;
    },
  };
}

export type UsageRepository = ReturnType<typeof createUsageRepository>;
