// Two-factor sign-in for dashboard users: a TOTP secret (RFC 6238, src/lib/totp.ts) sealed at rest,
// enrolled by confirming a first code; ten one-time recovery codes kept as keyed digests; the
// account's rule that every user must use it; and the short-lived token that carries a user from
// the password to the second step. A code is accepted once: the step it belongs to is stored, and
// only a later step is accepted after it. Codes and tokens are compared in constant time.
import { randomBytes } from "node:crypto";
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import { AppError } from "../../core/errors";
import type { SecretBox } from "../../lib/secrets";
import { MINUTE } from "../../lib/time";
import { base32Decode, base32Encode, otpauthUri, sameCode, verifyTotp } from "../../lib/totp";
import type { User, UserRepository } from "./repository";

/** How many recovery codes enrolment gives. */
export const RECOVERY_CODES = 10;
/** How long the second step waits after the password was right. */
export const PENDING_SIGN_IN_MS = 5 * MINUTE;
/** The name authenticator apps show beside the account. */
export const TOTP_ISSUER = "Pigeon";
const SECRET_BYTES = 20;

/** A recovery code as typed: case, spaces and dashes do not matter. */
const normalRecovery = (code: string) => code.toLowerCase().replace(/[\s-]/g, "");

function newRecoveryCode(): string {
  const raw = base32Encode(randomBytes(8)).slice(0, 10).toLowerCase();
  return `${raw.slice(0, 5)}-${raw.slice(5)}`;
}

export type SecondFactor = "totp" | "recovery";

export function createTwoFactor(deps: { storage: Storage; repo: UserRepository; clock: Clock; secrets: SecretBox }) {
  const { storage, repo, clock, secrets } = deps;
  const recoveryDigest = (userId: number, code: string) => secrets.digest(`dashboard-recovery:${userId}:${normalRecovery(code)}`);
  const keyOf = (sealed: string) => base32Decode(secrets.open(sealed)) ?? new Uint8Array();

  /** What binds a pending sign-in token: the user, its expiry, and what a sign-in or a reset changes. */
  async function pendingMac(user: User, expires: number): Promise<string> {
    const state = await repo.totpOf(user.id);
    const left = await repo.recoveryCodesLeft(user.id);
    return secrets.digest(
      `dashboard-2fa-pending:${user.id}:${expires}:${user.passwordHash}:${state?.enabledAt ?? ""}:${state?.lastStep ?? ""}:${left}`,
    );
  }

  return {
    /** Whether the user has it on, how many recovery codes are left, and whether the account requires it. */
    async status(user: User) {
      return {
        enabled: user.totpEnabledAt !== null,
        recoveryCodesLeft: await repo.recoveryCodesLeft(user.id),
        required: await repo.twoFactorRequired(user.accountId),
      };
    },

    /**
     * The secret being enrolled (made on first call, the same until confirmed, so a reload shows
     * the same QR code) and the otpauth:// URI for the QR code.
     */
    async enrolment(user: User): Promise<{ secret: string; uri: string }> {
      const state = await repo.totpOf(user.id);
      if (state?.enabledAt != null) throw new AppError("conflict", "Two-factor sign-in is already on");
      let secret = state?.pending ? secrets.open(state.pending) : null;
      if (!secret) {
        secret = base32Encode(randomBytes(SECRET_BYTES));
        await repo.setTotpPending(user.id, secrets.seal(secret), clock.now());
      }
      return { secret, uri: otpauthUri({ issuer: TOTP_ISSUER, account: user.email, secret }) };
    },

    /**
     * Turns it on when `code` is the app's current code; the new recovery codes, or null. Every
     * other session of the user ends (one signed in with the password alone would outlive it);
     * `keepSession`, the one confirming, goes on.
     */
    async confirm(user: User, code: string, keepSession: number): Promise<string[] | null> {
      const state = await repo.totpOf(user.id);
      if (!state?.pending || state.enabledAt !== null) return null;
      const step = verifyTotp(keyOf(state.pending), code, clock.now());
      if (step === null) return null;
      const codes = Array.from({ length: RECOVERY_CODES }, newRecoveryCode);
      const done = await storage.transaction(async () => {
        if (!(await repo.enableTotp(user.id, state.pending!, step, clock.now()))) return false;
        await repo.replaceRecoveryCodes(
          user.id,
          codes.map((c) => recoveryDigest(user.id, c)),
          clock.now(),
        );
        await repo.endOtherSessionsOf(user.id, keepSession, clock.now());
        return true;
      });
      return done ? codes : null;
    },

    /** Checks a second factor: a current code (once), or an unused recovery code (used up). */
    async check(user: User, typed: string): Promise<SecondFactor | null> {
      const state = await repo.totpOf(user.id);
      if (!state?.secret || state.enabledAt === null) return null;
      const code = typed.trim();
      if (/^\d[\d\s]*$/.test(code)) {
        const step = verifyTotp(keyOf(state.secret), code, clock.now(), state.lastStep);
        return step !== null && (await repo.takeTotpStep(user.id, step)) ? "totp" : null;
      }
      if (normalRecovery(code).length !== 10) return null;
      return (await repo.useRecoveryCode(user.id, recoveryDigest(user.id, code), clock.now())) ? "recovery" : null;
    },

    /** Turns it off when `code` is a current code; false when it is not. */
    async disable(user: User, code: string): Promise<boolean> {
      const state = await repo.totpOf(user.id);
      if (!state?.secret) return false;
      const step = verifyTotp(keyOf(state.secret), code, clock.now(), state.lastStep);
      if (step === null || !(await repo.takeTotpStep(user.id, step))) return false;
      await storage.transaction(async () => {
        await repo.clearTotp(user.id, clock.now());
        await repo.deleteRecoveryCodes(user.id);
      });
      return true;
    },

    /** For a locked-out user (the CLI; `email` already normalised): its secret and recovery codes removed. */
    async reset(email: string): Promise<{ email: string; hadTwoFactor: boolean }> {
      const user = await repo.userByEmail(email);
      if (!user) throw new AppError("not_found", `No user with the email ${email}`);
      const state = await repo.totpOf(user.id);
      // Whoever holds a session of the locked-out user (perhaps whoever took the phone) is signed out.
      await storage.transaction(async () => {
        await repo.clearTotp(user.id, clock.now());
        await repo.deleteRecoveryCodes(user.id);
        await repo.endSessionsOf(user.id, clock.now());
      });
      return { email, hadTwoFactor: state?.enabledAt != null };
    },

    required: (accountId: number) => repo.twoFactorRequired(accountId),
    setRequired: (accountId: number, required: boolean) => repo.setTwoFactorRequired(accountId, required, clock.now()),

    /** A token naming the user between the password and the second step; stops working when used or late. */
    async pendingToken(user: User): Promise<string> {
      const expires = clock.now() + PENDING_SIGN_IN_MS;
      return `${user.id}.${expires}.${(await pendingMac(user, expires)).replace(/^hmac:/, "")}`;
    },

    /** The user a pending token names, or null when it is malformed, forged, late or spent. */
    async pendingUser(token: string): Promise<User | null> {
      const match = /^(\d{1,15})\.(\d{1,15})\.([0-9a-f]{64})$/.exec(token);
      if (!match) return null;
      const expires = Number(match[2]);
      if (expires <= clock.now()) return null;
      const user = await repo.userById(Number(match[1]));
      if (!user || user.totpEnabledAt === null) return null;
      const expected = (await pendingMac(user, expires)).replace(/^hmac:/, "");
      return sameCode(expected, match[3]) ? user : null;
    },
  };
}

export type TwoFactor = ReturnType<typeof createTwoFactor>;
