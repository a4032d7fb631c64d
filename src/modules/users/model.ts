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
  /** Whether the user signs in with a second factor. */
  twoFactor: boolean;
  /** Whether the account requires every user to (the user is sent to enrolment until then). */
  twoFactorRequired: boolean;
}
