// Dashboard users: accounts' owners and members, their passwords (argon2id through Bun.password,
// hashed off the event loop), their browser sessions (a random token in the cookie, its digest in
// the database, ended after 30 idle days or on sign-out) and the one-time setup link printed at
// first start. The CLI (`pigeon users …`) and the dashboard share these rules.
import type { Clock } from "../../clock";
import { AppError } from "../../core/errors";
import { DAY, MINUTE } from "../../lib/time";
import { randomBase62, sha256Hex } from "../../lib/tokens";
import type { AccountsService } from "../accounts/service";
import type { Storage } from "../../db/storage";
import type { User, UserRepository } from "./repository";
import type { Role, SessionWithUser } from "./model";
import type { SecretBox } from "../../lib/secrets";
import { createTwoFactor } from "./two-factor";

export type { Role, SessionWithUser, User };
export const ROLES: readonly Role[] = ["owner", "member"];

/** A session unused this long ends. */
export const SESSION_IDLE_MS = 30 * DAY;
/** A setup link works this long. */
export const SETUP_LINK_MS = DAY;
/** Bounds on a password: long enough to resist guessing, short enough that hashing stays cheap. */
export const PASSWORD_MIN = 10;
export const PASSWORD_MAX = 200;

// A plain shape check; the address is a sign-in name, nothing is mailed to it.
const EMAIL = /^[^\s@]{1,64}@[^\s@.]+(\.[^\s@.]+)+$/;

export interface PublicUser {
  id: number;
  email: string;
  role: Role;
  account_id: number;
  created_at: string;
}

export function presentUser(u: User): PublicUser {
  return { id: u.id, email: u.email, role: u.role, account_id: u.accountId, created_at: new Date(u.createdAt).toISOString() };
}

export function normalEmail(raw: string): string {
  const email = raw.trim().toLowerCase();
  if (email.length > 254 || !EMAIL.test(email)) {
    throw new AppError("invalid_email", "Enter an email address such as owner@example.com", { field: "email" });
  }
  return email;
}

export function checkPassword(password: string): void {
  if (password.length < PASSWORD_MIN) {
    throw new AppError("validation_error", `The password needs at least ${PASSWORD_MIN} characters`, {
      field: "password",
      reason: "too short",
    });
  }
  if (password.length > PASSWORD_MAX) {
    throw new AppError("validation_error", `The password may have at most ${PASSWORD_MAX} characters`, {
      field: "password",
      reason: "too long",
    });
  }
}

const hashPassword = (password: string) => Bun.password.hash(password, { algorithm: "argon2id" });

export function createUserService(deps: {
  storage: Storage;
  repo: UserRepository;
  clock: Clock;
  accounts: AccountsService;
  secrets: SecretBox;
}) {
  const { storage, repo, clock, accounts } = deps;
  const twoFactor = createTwoFactor(deps);
  // Compared against when the email is unknown, so a wrong email costs as long as a wrong password.
  let decoy: Promise<string> | null = null;

  async function createUser(input: { email: string; password: string; accountId?: number; role?: Role }): Promise<PublicUser> {
    const email = normalEmail(input.email);
    checkPassword(input.password);
    const account = input.accountId === undefined ? await accounts.requireOwner() : await accounts.getAccount(input.accountId);
    const role = input.role ?? "owner";
    if (!ROLES.includes(role)) throw new AppError("validation_error", "role must be owner or member", { field: "role" });
    if (await repo.userByEmail(email)) throw new AppError("conflict", `A user with the email ${email} already exists`, { field: "email" });
    const passwordHash = await hashPassword(input.password);
    // Checked again after the hash: another request may have taken the address meanwhile.
    return storage.transaction(async () => {
      if (await repo.userByEmail(email))
        throw new AppError("conflict", `A user with the email ${email} already exists`, { field: "email" });
      return presentUser(await repo.insertUser({ accountId: account.id, email, passwordHash, role, at: clock.now() }));
    });
  }

  /** A new password; every session of the user ends, so a stolen cookie stops working too. */
  async function setPassword(rawEmail: string, password: string): Promise<PublicUser> {
    const email = normalEmail(rawEmail);
    checkPassword(password);
    const user = await repo.userByEmail(email);
    if (!user) throw new AppError("not_found", `No user with the email ${email}`);
    const hash = await hashPassword(password);
    await storage.transaction(async () => {
      await repo.setPasswordHash(user.id, hash, clock.now());
      await repo.endSessionsOf(user.id, clock.now());
    });
    return presentUser(user);
  }

  /** The user whose email and password these are, or null. */
  async function verify(rawEmail: string, password: string): Promise<User | null> {
    const email = rawEmail.trim().toLowerCase();
    const user = email.length <= 254 ? await repo.userByEmail(email) : null;
    if (password.length > PASSWORD_MAX) return null;
    if (!user) {
      decoy ??= hashPassword(randomBase62(24));
      await Bun.password.verify(password, await decoy);
      return null;
    }
    return (await Bun.password.verify(password, user.passwordHash)) ? user : null;
  }

  /** A new session for the user on its account's first workspace; the token goes in the cookie. */
  async function startSession(user: User, userAgent: string | null): Promise<string> {
    const token = randomBase62(43);
    const [workspace] = await accounts.listWorkspaces(user.accountId);
    if (!workspace) throw new AppError("conflict", "This account has no workspace");
    await repo.insertSession({
      userId: user.id,
      tokenHash: sha256Hex(token),
      workspaceId: workspace.id,
      at: clock.now(),
      userAgent: userAgent?.slice(0, 300) ?? null,
    });
    return token;
  }

  /** The live session a cookie token names, or null; its idle clock restarts (at most once a minute). */
  async function session(token: string): Promise<SessionWithUser | null> {
    const row = await repo.sessionByHash(sha256Hex(token));
    const now = clock.now();
    if (!row || row.endedAt !== null) return null;
    if (now - row.lastSeenAt > SESSION_IDLE_MS) {
      await repo.endSession(row.id, now);
      return null;
    }
    if (now - row.lastSeenAt > MINUTE) await repo.touchSession(row.id, now);
    return row;
  }

  async function endSession(token: string): Promise<void> {
    const row = await repo.sessionByHash(sha256Hex(token));
    if (row) await repo.endSession(row.id, clock.now());
  }

  /**
   * A fresh setup link for an account that has no user yet (earlier unused links stop working);
   * null once it has one. The token is returned once and stored as a digest.
   */
  function issueSetupToken(accountId: number): Promise<string | null> {
    return storage.transaction(async () => {
      if ((await repo.userCount(accountId)) > 0) return null;
      const now = clock.now();
      await repo.retireSetups(accountId, now);
      const token = randomBase62(32);
      await repo.insertSetup(accountId, sha256Hex(token), now, now + SETUP_LINK_MS);
      return token;
    });
  }

  /** Whether a setup token can still be used (for showing the form). */
  async function setupValid(token: string): Promise<boolean> {
    const row = await repo.setupByHash(sha256Hex(token));
    return !!row && row.usedAt === null && row.expiresAt > clock.now() && (await repo.userCount(row.accountId)) === 0;
  }

  /** Uses a setup link: its account's owner with this email and password. */
  async function completeSetup(token: string, email: string, password: string): Promise<User> {
    const row = await repo.setupByHash(sha256Hex(token));
    if (!row || row.usedAt !== null || row.expiresAt <= clock.now()) {
      throw new AppError("unauthorized", "This setup link is no longer valid; ask for a new one with `pigeon users create`");
    }
    const normal = normalEmail(email);
    checkPassword(password);
    const passwordHash = await hashPassword(password);
    return storage.transaction(async () => {
      if (!(await repo.useSetup(row.id, clock.now())) || (await repo.userCount(row.accountId)) > 0) {
        throw new AppError("unauthorized", "This setup link has already been used");
      }
      if (await repo.userByEmail(normal))
        throw new AppError("conflict", `A user with the email ${normal} already exists`, { field: "email" });
      return repo.insertUser({ accountId: row.accountId, email: normal, passwordHash, role: "owner", at: clock.now() });
    });
  }

  return {
    createUser,
    setPassword,
    verify,
    listUsers: async (accountId?: number) => (await repo.users(accountId)).map(presentUser),
    startSession,
    session,
    endSession,
    switchWorkspace: (sessionId: number, workspaceId: number) => repo.setSessionWorkspace(sessionId, workspaceId),
    issueSetupToken,
    setupValid,
    completeSetup,
    userById: (id: number) => repo.userById(id),
    twoFactor: { ...twoFactor, reset: (email: string) => twoFactor.reset(normalEmail(email)) },
  };
}

export type UserService = ReturnType<typeof createUserService>;
