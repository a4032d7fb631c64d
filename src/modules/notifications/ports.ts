// What other modules and the channels may use of the notifications module's storage: narrow views of its
// repositories, each naming only the methods used outside the module. The repositories stay private.
import type { NotificationRepository } from "./repository";
import type { UsageRepository } from "./usage-repository";

export type NotificationStore = Pick<
  NotificationRepository,
  | "byExternalId"
  | "claimExternalId"
  | "claimMany"
  | "count"
  | "dispatchedSinceMany"
  | "dueCandidates"
  | "externalIdsTaken"
  | "foldHourly"
  | "get"
  | "insert"
  | "insertMany"
  | "keepFirstLine"
  | "list"
  | "lockClaims"
  | "recoverInterrupted"
  | "requeue"
  | "reroute"
  | "restampMany"
  | "stranded"
>;

export type UsageStore = Pick<UsageRepository, "accountSmsSince" | "holdAllowance">;
