// The webhooks module's records: a subscription, and a delivery with what its call needs.

/** Where a workspace's events are posted, and how that has been going. */
export interface Subscription {
  id: number;
  workspaceId: number;
  url: string;
  /** Event types, or ["*"] for all of them. */
  events: string[];
  description: string;
  /** Sealed with the data directory's key. */
  secret: string;
  status: "active" | "failing" | "disabled";
  consecutiveFailures: number;
  failingSince: number | null;
  createdAt: number;
  updatedAt: number;
  deletedAt: number | null;
  format: "pigeon" | "smsgate";
  externalId: string | null;
  smsgateEvent: string | null;
  smsgateDeviceId: number | null;
}

/** A delivery with what its call needs: the subscription's address and secret, and the event. */
export interface DueDelivery {
  id: string;
  subscriptionId: number;
  eventId: string;
  attempts: number;
  url: string;
  secret: string;
  format: Subscription["format"];
  externalId: string | null;
  smsgateEvent: string | null;
  smsgateDeviceId: number | null;
  workspaceId: number;
  type: string;
  /** The event's data object. */
  data: Record<string, unknown>;
  eventCreatedAt: number;
}
