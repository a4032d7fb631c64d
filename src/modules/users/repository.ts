// Dashboard users, their sessions and the one-time setup links, on the storage seam: the SQL is
// here, and rows become the domain's records (camelCase, numbers) before they leave this file.
import type { Executor } from "../../db/storage";
import type { Role, SessionWithUser } from "./model";

export interface User {
  id: number;
  accountId: number;
  email: string;
  passwordHash: string;
  role: Role;
  createdAt: number;
  updatedAt: number;
}

export interface SetupLink {
  id: number;
  accountId: number;
  createdAt: number;
  expiresAt: number;
  usedAt: number | null;
}

interface UserRow {
  id: number;
  account_id: number;
  email: string;
  password_hash: string;
  role: Role;
  created_at: number;
  updated_at: number;
}

interface SessionRow {
  id: number;
  workspace_id: number;
  last_seen_at: number;
  ended_at: number | null;
  created_at: number;
  user_id: number;
  email: string;
  role: Role;
  account_id: number;
}

interface SetupRow {
  id: number;
  account_id: number;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

const toUser = (r: UserRow): User => ({
  id: r.id,
  accountId: r.account_id,
  email: r.email,
  passwordHash: r.password_hash,
  role: r.role,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const toSession = (r: SessionRow): SessionWithUser => ({
  id: r.id,
  workspaceId: r.workspace_id,
  lastSeenAt: r.last_seen_at,
  endedAt: r.ended_at,
  createdAt: r.created_at,
  userId: r.user_id,
  email: r.email,
  role: r.role,
  accountId: r.account_id,
});

const toSetup = (r: SetupRow): SetupLink => ({
  id: r.id,
  accountId: r.account_id,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
  usedAt: r.used_at,
});

const USER = "SELECT id, account_id, email, password_hash, role, created_at, updated_at FROM dashboard_user";

const SQL = {
  userByEmail: `${USER} WHERE email = ?`,
  userById: `${USER} WHERE id = ?`,
  insertUser:
    "INSERT INTO dashboard_user (account_id, email, password_hash, role, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?) " +
    "RETURNING id, account_id, email, password_hash, role, created_at, updated_at",
  setPasswordHash: "UPDATE dashboard_user SET password_hash = ?, updated_at = ? WHERE id = ?",
  allUsers: `${USER} ORDER BY account_id, id`,
  usersOf: `${USER} WHERE account_id = ? ORDER BY id`,
  userCount: "SELECT count(*) AS n FROM dashboard_user WHERE account_id = ?",
  insertSession:
    "INSERT INTO dashboard_session (user_id, token_hash, workspace_id, created_at, last_seen_at, user_agent) VALUES (?, ?, ?, ?, ?, ?)",
  sessionByHash:
    "SELECT s.id, s.workspace_id, s.last_seen_at, s.ended_at, s.created_at, u.id AS user_id, u.email, u.role, u.account_id " +
    "FROM dashboard_session s JOIN dashboard_user u ON u.id = s.user_id WHERE s.token_hash = ?",
  touchSession: "UPDATE dashboard_session SET last_seen_at = ? WHERE id = ?",
  endSession: "UPDATE dashboard_session SET ended_at = ? WHERE id = ? AND ended_at IS NULL",
  endSessionsOf: "UPDATE dashboard_session SET ended_at = ? WHERE user_id = ? AND ended_at IS NULL",
  setSessionWorkspace: "UPDATE dashboard_session SET workspace_id = ? WHERE id = ?",
  insertSetup: "INSERT INTO dashboard_setup (account_id, token_hash, created_at, expires_at) VALUES (?, ?, ?, ?)",
  // The earlier of the two instants, written so every SQL dialect reads it the same.
  retireSetups:
    "UPDATE dashboard_setup SET expires_at = CASE WHEN expires_at < ? THEN expires_at ELSE ? END WHERE account_id = ? AND used_at IS NULL",
  setupByHash: "SELECT id, account_id, created_at, expires_at, used_at FROM dashboard_setup WHERE token_hash = ?",
  useSetup: "UPDATE dashboard_setup SET used_at = ? WHERE id = ? AND used_at IS NULL",
};

export function createUserRepository(db: Executor) {
  return {
    userByEmail: async (email: string): Promise<User | null> => {
      const row = await db.get<UserRow>(SQL.userByEmail, [email]);
      return row ? toUser(row) : null;
    },
    userById: async (id: number): Promise<User | null> => {
      const row = await db.get<UserRow>(SQL.userById, [id]);
      return row ? toUser(row) : null;
    },
    insertUser: async (u: { accountId: number; email: string; passwordHash: string; role: Role; at: number }): Promise<User> =>
      toUser((await db.get<UserRow>(SQL.insertUser, [u.accountId, u.email, u.passwordHash, u.role, u.at, u.at]))!),
    setPasswordHash: async (id: number, hash: string, at: number) => void (await db.run(SQL.setPasswordHash, [hash, at, id])),
    users: async (accountId?: number): Promise<User[]> =>
      (accountId === undefined ? await db.all<UserRow>(SQL.allUsers) : await db.all<UserRow>(SQL.usersOf, [accountId])).map(toUser),
    userCount: async (accountId: number): Promise<number> => (await db.get<{ n: number }>(SQL.userCount, [accountId]))!.n,

    insertSession: async (s: { userId: number; tokenHash: string; workspaceId: number; at: number; userAgent: string | null }) =>
      void (await db.run(SQL.insertSession, [s.userId, s.tokenHash, s.workspaceId, s.at, s.at, s.userAgent])),
    sessionByHash: async (hash: string): Promise<SessionWithUser | null> => {
      const row = await db.get<SessionRow>(SQL.sessionByHash, [hash]);
      return row ? toSession(row) : null;
    },
    touchSession: async (id: number, at: number) => void (await db.run(SQL.touchSession, [at, id])),
    endSession: async (id: number, at: number) => void (await db.run(SQL.endSession, [at, id])),
    endSessionsOf: async (userId: number, at: number) => void (await db.run(SQL.endSessionsOf, [at, userId])),
    setSessionWorkspace: async (id: number, workspaceId: number) => void (await db.run(SQL.setSessionWorkspace, [workspaceId, id])),

    insertSetup: async (accountId: number, tokenHash: string, at: number, expiresAt: number) =>
      void (await db.run(SQL.insertSetup, [accountId, tokenHash, at, expiresAt])),
    retireSetups: async (accountId: number, at: number) => void (await db.run(SQL.retireSetups, [at, at, accountId])),
    setupByHash: async (hash: string): Promise<SetupLink | null> => {
      const row = await db.get<SetupRow>(SQL.setupByHash, [hash]);
      return row ? toSetup(row) : null;
    },
    useSetup: async (id: number, at: number): Promise<boolean> => (await db.run(SQL.useSetup, [at, id])).changes === 1,
  };
}

export type UserRepository = ReturnType<typeof createUserRepository>;
