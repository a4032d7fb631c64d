// Dashboard users, their sessions and the one-time setup links. Raw prepared statements: a session
// is looked up on every dashboard request, and the rest are single-row reads and writes.
import type { Database, Statement } from "bun:sqlite";
import type { RawRow } from "../../db/raw-row";
import type { dashboardSession, dashboardSetup, dashboardUser } from "../../db/schema";

export type UserRow = RawRow<typeof dashboardUser>;
export type SessionRow = RawRow<typeof dashboardSession>;
type SetupRow = RawRow<typeof dashboardSetup>;

/** A live session with who it belongs to, in one row. */
export type SessionWithUser = Pick<SessionRow, "id" | "workspace_id" | "last_seen_at" | "ended_at" | "created_at"> & {
  user_id: number;
  email: string;
  role: UserRow["role"];
  account_id: number;
};

export function createUserRepository(sqlite: Database) {
  const byEmail: Statement<UserRow, [string]> = sqlite.prepare("SELECT * FROM dashboard_user WHERE email = ?");
  const byId: Statement<UserRow, [number]> = sqlite.prepare("SELECT * FROM dashboard_user WHERE id = ?");
  const insertUser: Statement<UserRow, [number, string, string, string, number, number]> = sqlite.prepare(
    "INSERT INTO dashboard_user (account_id, email, password_hash, role, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING *",
  );
  const setHash = sqlite.prepare("UPDATE dashboard_user SET password_hash = ?, updated_at = ? WHERE id = ?");
  const all: Statement<UserRow, []> = sqlite.prepare("SELECT * FROM dashboard_user ORDER BY account_id, id");
  const ofAccount: Statement<UserRow, [number]> = sqlite.prepare("SELECT * FROM dashboard_user WHERE account_id = ? ORDER BY id");
  const countOfAccount: Statement<{ n: number }, [number]> = sqlite.prepare(
    "SELECT count(*) AS n FROM dashboard_user WHERE account_id = ?",
  );

  const insertSession = sqlite.prepare(
    "INSERT INTO dashboard_session (user_id, token_hash, workspace_id, created_at, last_seen_at, user_agent) VALUES (?, ?, ?, ?, ?, ?)",
  );
  const sessionByHash: Statement<SessionWithUser, [string]> = sqlite.prepare(`
    SELECT s.id, s.workspace_id, s.last_seen_at, s.ended_at, s.created_at, u.id AS user_id, u.email, u.role, u.account_id
    FROM dashboard_session s JOIN dashboard_user u ON u.id = s.user_id WHERE s.token_hash = ?`);
  const touch = sqlite.prepare("UPDATE dashboard_session SET last_seen_at = ? WHERE id = ?");
  const endOne = sqlite.prepare("UPDATE dashboard_session SET ended_at = ? WHERE id = ? AND ended_at IS NULL");
  const endAll = sqlite.prepare("UPDATE dashboard_session SET ended_at = ? WHERE user_id = ? AND ended_at IS NULL");
  const setWorkspace = sqlite.prepare("UPDATE dashboard_session SET workspace_id = ? WHERE id = ?");

  const insertSetup = sqlite.prepare("INSERT INTO dashboard_setup (account_id, token_hash, created_at, expires_at) VALUES (?, ?, ?, ?)");
  const retireSetups = sqlite.prepare(
    "UPDATE dashboard_setup SET expires_at = min(expires_at, ?) WHERE account_id = ? AND used_at IS NULL",
  );
  const setupByHash: Statement<SetupRow, [string]> = sqlite.prepare("SELECT * FROM dashboard_setup WHERE token_hash = ?");
  const useSetup = sqlite.prepare("UPDATE dashboard_setup SET used_at = ? WHERE id = ? AND used_at IS NULL");

  return {
    transaction: <T>(fn: () => T): T => sqlite.transaction(fn)(),
    userByEmail: (email: string): UserRow | null => byEmail.get(email),
    userById: (id: number): UserRow | null => byId.get(id),
    insertUser: (u: { accountId: number; email: string; passwordHash: string; role: UserRow["role"]; at: number }): UserRow =>
      insertUser.get(u.accountId, u.email, u.passwordHash, u.role, u.at, u.at)!,
    setPasswordHash: (id: number, hash: string, at: number) => setHash.run(hash, at, id),
    users: (accountId?: number): UserRow[] => (accountId === undefined ? all.all() : ofAccount.all(accountId)),
    userCount: (accountId: number): number => countOfAccount.get(accountId)!.n,

    insertSession: (s: { userId: number; tokenHash: string; workspaceId: number; at: number; userAgent: string | null }) =>
      insertSession.run(s.userId, s.tokenHash, s.workspaceId, s.at, s.at, s.userAgent),
    sessionByHash: (hash: string): SessionWithUser | null => sessionByHash.get(hash),
    touchSession: (id: number, at: number) => touch.run(at, id),
    endSession: (id: number, at: number) => endOne.run(at, id),
    endSessionsOf: (userId: number, at: number) => endAll.run(at, userId),
    setSessionWorkspace: (id: number, workspaceId: number) => setWorkspace.run(workspaceId, id),

    insertSetup: (accountId: number, tokenHash: string, at: number, expiresAt: number) =>
      insertSetup.run(accountId, tokenHash, at, expiresAt),
    retireSetups: (accountId: number, at: number) => retireSetups.run(at, accountId),
    setupByHash: (hash: string): SetupRow | null => setupByHash.get(hash),
    useSetup: (id: number, at: number): boolean => useSetup.run(at, id).changes === 1,
  };
}

export type UserRepository = ReturnType<typeof createUserRepository>;
