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
  /** When two-factor sign-in was turned on; null while it is off. */
  totpEnabledAt: number | null;
}

/** What two-factor sign-in keeps of a user: the sealed secrets and the last accepted step. */
export interface TotpState {
  secret: string | null;
  pending: string | null;
  lastStep: number | null;
  enabledAt: number | null;
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
  totp_enabled_at: number | null;
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
  totp_enabled_at: number | null;
  two_factor_required: number | boolean | null;
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
  totpEnabledAt: r.totp_enabled_at === null ? null : Number(r.totp_enabled_at),
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
  twoFactor: r.totp_enabled_at !== null,
  twoFactorRequired: !!Number(r.two_factor_required ?? 0),
});

const toSetup = (r: SetupRow): SetupLink => ({
  id: r.id,
  accountId: r.account_id,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
  usedAt: r.used_at,
});

const USER_COLUMNS = "id, account_id, email, password_hash, role, created_at, updated_at, totp_enabled_at";
const USER = `SELECT ${USER_COLUMNS} FROM dashboard_user`;

const SQL = {
  userByEmail: `${USER} WHERE email = ?`,
  userById: `${USER} WHERE id = ?`,
  insertUser:
    "INSERT INTO dashboard_user (account_id, email, password_hash, role, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?) " +
    `RETURNING ${USER_COLUMNS}`,
  setPasswordHash: "UPDATE dashboard_user SET password_hash = ?, updated_at = ? WHERE id = ?",
  allUsers: `${USER} ORDER BY account_id, id`,
  usersOf: `${USER} WHERE account_id = ? ORDER BY id`,
  userCount: "SELECT count(*) AS n FROM dashboard_user WHERE account_id = ?",
  insertSession:
    "INSERT INTO dashboard_session (user_id, token_hash, workspace_id, created_at, last_seen_at, user_agent) VALUES (?, ?, ?, ?, ?, ?)",
  sessionByHash:
    "SELECT s.id, s.workspace_id, s.last_seen_at, s.ended_at, s.created_at, u.id AS user_id, u.email, u.role, u.account_id, " +
    "u.totp_enabled_at, p.two_factor_required FROM dashboard_session s JOIN dashboard_user u ON u.id = s.user_id " +
    "LEFT JOIN dashboard_account_policy p ON p.account_id = u.account_id WHERE s.token_hash = ?",
  touchSession: "UPDATE dashboard_session SET last_seen_at = ? WHERE id = ?",
  endSession: "UPDATE dashboard_session SET ended_at = ? WHERE id = ? AND ended_at IS NULL",
  endSessionsOf: "UPDATE dashboard_session SET ended_at = ? WHERE user_id = ? AND ended_at IS NULL",
  endOtherSessionsOf: "UPDATE dashboard_session SET ended_at = ? WHERE user_id = ? AND id <> ? AND ended_at IS NULL",
  setSessionWorkspace: "UPDATE dashboard_session SET workspace_id = ? WHERE id = ?",
  insertSetup: "INSERT INTO dashboard_setup (account_id, token_hash, created_at, expires_at) VALUES (?, ?, ?, ?)",
  // The earlier of the two instants, written so every SQL dialect reads it the same.
  retireSetups:
    "UPDATE dashboard_setup SET expires_at = CASE WHEN expires_at < ? THEN expires_at ELSE ? END WHERE account_id = ? AND used_at IS NULL",
  setupByHash: "SELECT id, account_id, created_at, expires_at, used_at FROM dashboard_setup WHERE token_hash = ?",
  useSetup: "UPDATE dashboard_setup SET used_at = ? WHERE id = ? AND used_at IS NULL",

  totpOf: "SELECT totp_secret, totp_pending, totp_last_step, totp_enabled_at FROM dashboard_user WHERE id = ?",
  setTotpPending: "UPDATE dashboard_user SET totp_pending = ?, updated_at = ? WHERE id = ?",
  // Turned on only from the pending secret read before, so two confirmations cannot mix secrets.
  enableTotp:
    "UPDATE dashboard_user SET totp_secret = totp_pending, totp_pending = NULL, totp_last_step = ?, totp_enabled_at = ?, updated_at = ? " +
    "WHERE id = ? AND totp_pending = ?",
  clearTotp:
    "UPDATE dashboard_user SET totp_secret = NULL, totp_pending = NULL, totp_last_step = NULL, totp_enabled_at = NULL, updated_at = ? WHERE id = ?",
  // A step is taken once: the update succeeds only for a step later than the last accepted one.
  takeTotpStep:
    "UPDATE dashboard_user SET totp_last_step = ? WHERE id = ? AND totp_enabled_at IS NOT NULL AND (totp_last_step IS NULL OR totp_last_step < ?)",
  deleteRecoveryCodes: "DELETE FROM dashboard_recovery_code WHERE user_id = ?",
  insertRecoveryCode: "INSERT INTO dashboard_recovery_code (user_id, code_hash, created_at) VALUES (?, ?, ?)",
  useRecoveryCode: "UPDATE dashboard_recovery_code SET used_at = ? WHERE user_id = ? AND code_hash = ? AND used_at IS NULL",
  recoveryCodesLeft: "SELECT count(*) AS n FROM dashboard_recovery_code WHERE user_id = ? AND used_at IS NULL",
  policyOf: "SELECT two_factor_required FROM dashboard_account_policy WHERE account_id = ?",
  // One row per account, made on first use; written so both SQL dialects read it the same.
  insertPolicy:
    "INSERT INTO dashboard_account_policy (account_id, two_factor_required, updated_at) VALUES (?, ?, ?) ON CONFLICT (account_id) DO UPDATE SET two_factor_required = excluded.two_factor_required, updated_at = excluded.updated_at",
};

interface TotpRow {
  totp_secret: string | null;
  totp_pending: string | null;
  totp_last_step: number | null;
  totp_enabled_at: number | null;
}

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
    endOtherSessionsOf: async (userId: number, keep: number, at: number) => void (await db.run(SQL.endOtherSessionsOf, [at, userId, keep])),
    setSessionWorkspace: async (id: number, workspaceId: number) => void (await db.run(SQL.setSessionWorkspace, [workspaceId, id])),

    insertSetup: async (accountId: number, tokenHash: string, at: number, expiresAt: number) =>
      void (await db.run(SQL.insertSetup, [accountId, tokenHash, at, expiresAt])),
    retireSetups: async (accountId: number, at: number) => void (await db.run(SQL.retireSetups, [at, at, accountId])),
    setupByHash: async (hash: string): Promise<SetupLink | null> => {
      const row = await db.get<SetupRow>(SQL.setupByHash, [hash]);
      return row ? toSetup(row) : null;
    },
    useSetup: async (id: number, at: number): Promise<boolean> => (await db.run(SQL.useSetup, [at, id])).changes === 1,

    totpOf: async (userId: number): Promise<TotpState | null> => {
      const row = await db.get<TotpRow>(SQL.totpOf, [userId]);
      if (!row) return null;
      const num = (v: number | null) => (v === null ? null : Number(v));
      return { secret: row.totp_secret, pending: row.totp_pending, lastStep: num(row.totp_last_step), enabledAt: num(row.totp_enabled_at) };
    },
    setTotpPending: async (userId: number, sealed: string | null, at: number) =>
      void (await db.run(SQL.setTotpPending, [sealed, at, userId])),
    enableTotp: async (userId: number, pending: string, step: number, at: number): Promise<boolean> =>
      (await db.run(SQL.enableTotp, [step, at, at, userId, pending])).changes === 1,
    clearTotp: async (userId: number, at: number) => void (await db.run(SQL.clearTotp, [at, userId])),
    takeTotpStep: async (userId: number, step: number): Promise<boolean> =>
      (await db.run(SQL.takeTotpStep, [step, userId, step])).changes === 1,
    replaceRecoveryCodes: async (userId: number, hashes: string[], at: number) => {
      await db.run(SQL.deleteRecoveryCodes, [userId]);
      for (const hash of hashes) await db.run(SQL.insertRecoveryCode, [userId, hash, at]);
    },
    deleteRecoveryCodes: async (userId: number) => void (await db.run(SQL.deleteRecoveryCodes, [userId])),
    useRecoveryCode: async (userId: number, hash: string, at: number): Promise<boolean> =>
      (await db.run(SQL.useRecoveryCode, [at, userId, hash])).changes === 1,
    recoveryCodesLeft: async (userId: number): Promise<number> => Number((await db.get<{ n: number }>(SQL.recoveryCodesLeft, [userId]))!.n),
    twoFactorRequired: async (accountId: number): Promise<boolean> =>
      !!Number((await db.get<{ two_factor_required: number | boolean }>(SQL.policyOf, [accountId]))?.two_factor_required ?? 0),
    setTwoFactorRequired: async (accountId: number, required: boolean, at: number) =>
      void (await db.run(SQL.insertPolicy, [accountId, required ? 1 : 0, at])),
  };
}

export type UserRepository = ReturnType<typeof createUserRepository>;
