// The credits module's records: a ledger line, as the dashboard shows it.

/** One change of a workspace's balance and why. */
export interface LedgerRow {
  id: number;
  workspaceId: number;
  delta: number;
  reason: "debit" | "refund" | "topup" | "adjustment";
  notificationId: number | null;
  note: string | null;
  createdAt: number;
}
