// Pairing a phone with a workspace (docs/phone.md): registration with
// the pairing token, the app login (Basic) or a one-time code, the login's password, and the
// header checks made before a registration's body is read.
import { createHash, randomInt, timingSafeEqual } from "node:crypto";
import QRCode from "qrcode";
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import { AppError } from "../../core/errors";
import type { SecretBox } from "../../lib/secrets";
import { iso } from "../../lib/time";
import { nanoid, sha256Hex } from "../../lib/tokens";
import { appVersionOf, unauthorized } from "./protocol";
import type { PhoneRepository, WorkspaceAuthRow } from "./repository";
import type { DeviceRow } from "../../modules/devices/model";

const CODE_TTL_MS = 60_000;
/** argon2id at OWASP's recommended minimum (19 MiB, 2 passes): sound, and fast enough per pairing. */
const PASSWORD_HASH = { algorithm: "argon2id", memoryCost: 19456, timeCost: 2 } as const;

/** What a user needs to pair a stock phone: the server URL and the pairing token, as text and QR code. */
export async function pairingInfo(serverUrl: string, pairingToken: string) {
  const payload = JSON.stringify({ url: serverUrl, token: pairingToken });
  return {
    server_url: serverUrl,
    pairing_token: pairingToken,
    qr_svg: await QRCode.toString(payload, { type: "svg", margin: 2 }),
    qr_text: payload,
    app_settings: {
      "Cloud Server → API URL": serverUrl,
      "Cloud Server → Private Token": pairingToken,
      "Cloud Server → Notification channel": "SSE Only",
    },
  };
}

/** A one-time code as the app shows it: six digits. */
const drawSixDigits = () => String(randomInt(100000, 1000000));

/** Tries for a one-time code no live code already has (900,000 codes: a clash is rare, not impossible). */
const CODE_TRIES = 10;

export function createPhonePairing(deps: {
  storage: Storage;
  repo: PhoneRepository;
  clock: Clock;
  secrets: SecretBox;
  /** Where one-time codes come from (tests give their own). */
  drawCode?: () => string;
}) {
  const { storage, repo, clock, secrets } = deps;
  const drawCode = deps.drawCode ?? drawSixDigits;

  async function checkRegistrationHeaders(headers: Headers): Promise<void> {
    const [scheme = "", value = ""] = (headers.get("authorization") ?? "").split(/\s+/, 2);
    switch (scheme.toLowerCase()) {
      case "bearer":
        if (!(await byPairingToken(value))) throw unauthorized("Unknown pairing token");
        return;
      case "basic":
        if (!(await repo.workspaceByLogin(Buffer.from(value, "base64").toString("utf8").split(":")[0] ?? "")))
          throw unauthorized("Wrong login or password");
        return;
      case "code": {
        const expiresAt = await repo.codeExpiry(secrets.digest(value));
        if (expiresAt === null || expiresAt < clock.now()) throw unauthorized("Unknown or expired code");
        return;
      }
    }
    throw unauthorized("Pairing needs Authorization: Bearer <pairing token>, Basic, or Code");
  }

  async function byPairingToken(presented: string): Promise<WorkspaceAuthRow | null> {
    if (!presented) return null;
    const given = createHash("sha256").update(presented).digest();
    let found: WorkspaceAuthRow | null = null;
    // Pairing tokens are sealed with a random IV, so they cannot be looked up by value: each
    // workspace's is opened and compared in constant time (an installation has a handful).
    for (const row of await repo.workspacesWithPairingToken()) {
      const stored = createHash("sha256").update(secrets.open(row.pairingToken)).digest();
      if (timingSafeEqual(given, stored) && !found) found = row;
    }
    return found;
  }

  /** Argon2 costs tens of milliseconds: verified on Bun's worker threads, never on the event loop. */
  async function checkPassword(ws: WorkspaceAuthRow | null, password: string): Promise<boolean> {
    return !!ws?.mobilePasswordHash && (await Bun.password.verify(password, ws.mobilePasswordHash));
  }

  /** Which workspace a registration joins, from its Authorization header. */
  async function registrationWorkspace(headers: Headers): Promise<{ workspaceId: number; basic: boolean }> {
    const header = headers.get("authorization") ?? "";
    const [scheme, value = ""] = header.split(/\s+/, 2);
    switch (scheme?.toLowerCase()) {
      case "bearer": {
        const ws = await byPairingToken(value);
        if (!ws) throw unauthorized("Unknown pairing token");
        return { workspaceId: ws.id, basic: false };
      }
      case "basic": {
        const [login, ...rest] = Buffer.from(value, "base64").toString("utf8").split(":");
        const ws = await repo.workspaceByLogin(login);
        if (!ws || !(await checkPassword(ws, rest.join(":")))) throw unauthorized("Wrong login or password");
        return { workspaceId: ws.id, basic: true };
      }
      case "code": {
        await repo.pruneCodes(clock.now());
        const row = await repo.takeCode(secrets.digest(value));
        if (!row || row.expiresAt < clock.now()) throw unauthorized("Unknown or expired code");
        return { workspaceId: row.workspaceId, basic: true };
      }
    }
    throw unauthorized("Pairing needs Authorization: Bearer <pairing token>, Basic, or Code");
  }

  /** The workspace's app login, created with its password on first use (the password is shown then only). */
  async function credentials(workspaceId: number): Promise<{ login: string; password?: string }> {
    const ws = (await repo.workspaceById(workspaceId))!;
    if (ws.mobileLogin && ws.mobilePasswordHash) return { login: ws.mobileLogin };
    const login = nanoid(6)
      .toUpperCase()
      .replace(/[^A-Z0-9]/g, "X");
    const password = nanoid(14).toLowerCase();
    if (await repo.setCredentialsIfUnset(workspaceId, login, Bun.password.hashSync(password, PASSWORD_HASH))) return { login, password };
    // Another phone's registration set them first: its phone was shown the password.
    return { login: (await repo.workspaceById(workspaceId))!.mobileLogin! };
  }

  async function register(headers: Headers, body: { name: string; pushToken?: string | null; simCards?: unknown[] }) {
    const { workspaceId, basic } = await registrationWorkspace(headers);
    const now = clock.now();
    const token = nanoid(21);
    const name = body.name.slice(0, 128);
    const simCards = body.simCards ? JSON.stringify(body.simCards) : null;
    const appVersion = appVersionOf(headers.get("user-agent"));
    const created = await storage.transaction(async () => {
      // The login first: writing it locks the workspace's row, which the device's insert (its
      // foreign key) only shares. The other way round, two first registrations of a workspace each
      // held the shared lock and waited for the other's to write the login (PostgreSQL: deadlock).
      const login = await credentials(workspaceId);
      // The app registers afresh after a reinstall, a cleared token or any 401, with the same name
      // (MANUFACTURER/PRODUCT) and the same redacted SIM cards. Such a phone gets its device back
      // under a new token, so its waiting messages are not stranded on a twin that never returns.
      // This is safe: the caller has already proved it may pair phones with this workspace (and so
      // could have been given the messages anyway), only a phone with at least one SIM is matched,
      // and the old token stops working, so at most one app instance holds the device.
      const returning = simCards && (body.simCards?.length ?? 0) > 0 ? await repo.returningPhone(workspaceId, name, simCards) : null;
      let id: string;
      if (returning) {
        id = returning.externalId;
        await repo.reissueToken(returning.id, sha256Hex(token), body.pushToken ?? null, appVersion, now);
      } else {
        id = nanoid(21);
        await repo.insertDevice({
          workspaceId,
          name,
          externalId: id,
          tokenHash: sha256Hex(token),
          pushToken: body.pushToken ?? null,
          simCards,
          appVersion,
          at: now,
        });
      }
      return { id, ...login };
    });
    const id = created.id;
    // Signing in with Basic or Code means the user knows the password: it is not shown again.
    return { id, token, login: created.login, ...(created.password && !basic ? { password: created.password } : {}) };
  }

  async function oneTimeCode(headers: Headers) {
    const [scheme, value = ""] = (headers.get("authorization") ?? "").split(/\s+/, 2);
    if (scheme?.toLowerCase() !== "basic") throw unauthorized("Needs Basic login:password");
    const [login, ...rest] = Buffer.from(value, "base64").toString("utf8").split(":");
    const ws = await repo.workspaceByLogin(login);
    if (!ws || !(await checkPassword(ws, rest.join(":")))) throw unauthorized("Wrong login or password");
    const validUntil = clock.now() + CODE_TTL_MS;
    // A code is its row's key: one drawn again while another workspace's (or this one's) is still
    // live is drawn anew, not a 500.
    for (let i = 0; i < CODE_TRIES; i++) {
      const code = drawCode();
      if (await repo.insertCode(secrets.digest(code), ws.id, validUntil)) return { code, validUntil: iso(validUntil) };
    }
    throw new AppError("service_unavailable", "No one-time code is free right now; try again in a minute");
  }

  async function changePassword(device: DeviceRow, body: { currentPassword: string; newPassword: string }) {
    const ws = (await repo.workspaceById(device.workspaceId))!;
    if (!(await checkPassword(ws, body.currentPassword))) throw unauthorized("Current password is wrong");
    if (body.newPassword.length < 14) {
      throw new AppError("validation_error", "newPassword must be at least 14 characters", {
        field: "newPassword",
        location: "body",
        reason: "must be at least 14 characters",
      });
    }
    await repo.setPassword(ws.id, await Bun.password.hash(body.newPassword, PASSWORD_HASH));
  }

  return { checkRegistrationHeaders, register, oneTimeCode, changePassword };
}
