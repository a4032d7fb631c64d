// The users module's records that other layers name: a signed-in session.
/** A dashboard user's role in the account. */
export type Role = "owner" | "member";

/** A session with who it belongs to. */
export interface SessionWithUser {
  id: number;
  workspaceId: number;
  lastSeenAt: number;
  endedAt: number | null;
  createdAt: number;
  userId: number;
  email: string;
  role: Role;
  accountId: number;
}
