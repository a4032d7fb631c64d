// The companion app's side of Pigeon (shared/reference/companion-app-protocol.md): pairing,
// handing phones their messages within their pacing, taking their state reports and signed
// webhooks, and keeping their presence fresh.
import type { SignInGuard } from "../../http/foundation";
import type { Database, Statement } from "bun:sqlite";
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import type { Clock } from "../../clock";
import { AppError } from "../../http/errors";
import { toE164 } from "../../lib/phone";
import type { SecretBox } from "../../lib/secrets";
import { iso, MINUTE } from "../../lib/time";
import { nanoid, sha256Hex } from "../../lib/tokens";
import type { DeviceRepository, DeviceRow } from "../../modules/devices/repository";
import { OFFLINE_AFTER_MS } from "../../modules/devices/service";
import type { EventService } from "../../modules/events/service";
import { applyReport } from "../../modules/notifications/reports";
import type { NotificationRecord, NotificationState } from "../../modules/notifications/state";
import { recordInbound } from "../../modules/threads/inbound";
import type { ThreadRepository } from "../../modules/threads/repository";
import type { PhoneEventHub } from "./events";

/** Apps before this version have no `state` field and would send a Cancelling message. */
const CANCEL_AWARE = [1, 67, 0];
const MAX_MESSAGES = 100;
/** How far a webhook's X-Timestamp may be from our clock. */
const WEBHOOK_SKEW_S = 300;
const CODE_TTL_MS = 60_000;
/** argon2id at OWASP's recommended minimum (19 MiB, 2 passes): sound, and fast enough per pairing. */
const PASSWORD_HASH = { algorithm: "argon2id", memoryCost: 19456, timeCost: 2 } as const;

export const PHONE_WEBHOOK_EVENTS = ["sms:received", "sms:sent", "sms:delivered", "sms:failed"] as const;
export const PHONE_WEBHOOK_PATH = "/mobile/v1/webhook";

/** The app version from `User-Agent: me.capcom.smsgateway/1.68.0`, or null. */
export function appVersionOf(userAgent: string | null): string | null {
  return /me\.capcom\.smsgateway\/(\d+\.\d+\.\d+)/.exec(userAgent ?? "")?.[1] ?? null;
}

export function isCancelAware(version: string | null): boolean {
  if (!version) return false;
  const parts = version.split(".").map(Number);
  for (let i = 0; i < 3; i++) {
    if (parts[i] !== CANCEL_AWARE[i]) return parts[i] > CANCEL_AWARE[i];
  }
  return true;
}

type PhoneState = "Pending" | "Processed" | "Sent" | "Delivered" | "Failed" | "Cancelled" | "Cancelling";

export interface PatchItem {
  id: string;
  state: string;
  recipients?: { phoneNumber?: string; state?: string; error?: string | null }[];
  states?: Record<string, string>;
}

interface WorkspaceAuthRow {
  id: number;
  mobile_login: string | null;
  mobile_password_hash: string | null;
}

export function deviceEventData(device: DeviceRow, now: number) {
  return { device_id: device.id, name: device.name, kind: device.kind, last_sync: iso(device.lastSeenAt ?? now) };
}

/** An error in the app's own `{message, code}` shape (the foundation formats /mobile errors so). */
const unauthorized = (message = "Unauthorized") => new AppError("unauthorized", message);

export interface MobileDeps {
  sqlite: Database;
  clock: Clock;
  devices: DeviceRepository;
  state: NotificationState;
  threads: ThreadRepository;
  hub: PhoneEventHub;
  events: EventService;
  /** Seals the phone's signing key and digests one-time codes. */
  secrets: SecretBox;
}

export function createMobileService(deps: MobileDeps) {
  const { sqlite, clock, devices, state, threads, hub, events, secrets } = deps;

  const byToken: Statement<{ id: number }, [string]> = sqlite.prepare("SELECT id FROM device WHERE token_hash = ? AND deleted_at IS NULL AND kind = 'sms'");
  const byExternal: Statement<{ id: number }, [string]> = sqlite.prepare("SELECT id FROM device WHERE external_id = ? AND deleted_at IS NULL AND kind = 'sms'");
  // Pairing tokens are sealed with a random IV, so they cannot be looked up by value: each
  // workspace's is opened and compared in constant time (an installation has a handful).
  const allPairing: Statement<WorkspaceAuthRow & { pairing_token: string }, []> = sqlite.prepare(
    "SELECT id, mobile_login, mobile_password_hash, pairing_token FROM workspace",
  );
  const wsByLogin: Statement<WorkspaceAuthRow, [string]> = sqlite.prepare("SELECT id, mobile_login, mobile_password_hash FROM workspace WHERE mobile_login = ?");
  const wsById: Statement<WorkspaceAuthRow, [number]> = sqlite.prepare("SELECT id, mobile_login, mobile_password_hash FROM workspace WHERE id = ?");
  const setCredentials = sqlite.prepare("UPDATE workspace SET mobile_login = ?, mobile_password_hash = ? WHERE id = ?");
  const setPassword = sqlite.prepare("UPDATE workspace SET mobile_password_hash = ? WHERE id = ?");
  const insertCode = sqlite.prepare("INSERT INTO mobile_code (code, workspace_id, expires_at) VALUES (?, ?, ?)");
  const takeCode: Statement<{ workspace_id: number; expires_at: number }, [string]> = sqlite.prepare(
    "DELETE FROM mobile_code WHERE code = ? RETURNING workspace_id, expires_at",
  );
  const pruneCodes = sqlite.prepare("DELETE FROM mobile_code WHERE expires_at < ?");
  const peekCode: Statement<{ expires_at: number }, [string]> = sqlite.prepare("SELECT expires_at FROM mobile_code WHERE code = ?");
  const insertDevice: Statement<{ id: number }> = sqlite.prepare(`
    INSERT INTO device (workspace_id, name, kind, status, external_id, token_hash, push_token, sim_cards, app_version,
      send_limit_per_minute, last_seen_at, created_at, updated_at)
    VALUES (?, ?, 'sms', 'active', ?, ?, ?, ?, ?, 20, ?, ?, ?) RETURNING id`);
  const updateDevice = sqlite.prepare("UPDATE device SET push_token = ?, sim_cards = coalesce(?, sim_cards), updated_at = ? WHERE id = ?");
  const presence = sqlite.prepare("UPDATE device SET last_seen_at = ?, app_version = coalesce(?, app_version) WHERE id = ?");
  const setPresence = sqlite.prepare("UPDATE device SET presence = ? WHERE id = ?");
  const wentQuiet: Statement<{ id: number }, [number]> = sqlite.prepare(
    "SELECT id FROM device WHERE kind = 'sms' AND presence = 'online' AND deleted_at IS NULL AND (last_seen_at IS NULL OR last_seen_at < ?)",
  );
  const setKey = sqlite.prepare("UPDATE device SET webhook_key = ? WHERE id = ? AND webhook_key IS NULL");
  const queued: Statement<NotificationRecord, [number, number]> = sqlite.prepare(`
    SELECT * FROM notification
    WHERE device_id = ? AND route = 'sms' AND status = 'pending' AND stage = 'queued' AND next_attempt_at <= ?
    ORDER BY dispatched_at IS NULL, next_attempt_at, id LIMIT ${MAX_MESSAGES}`);
  const cancelling: Statement<NotificationRecord, [number]> = sqlite.prepare(
    `SELECT * FROM notification WHERE device_id = ? AND route = 'sms' AND status = 'cancelled' AND cancel_pending = 1 ORDER BY id LIMIT ${MAX_MESSAGES}`,
  );
  const handedSince: Statement<{ n: number }, [number, number]> = sqlite.prepare(
    "SELECT count(*) AS n FROM notification WHERE device_id = ? AND dispatched_at >= ?",
  );
  const markHanded = sqlite.prepare("UPDATE notification SET dispatched_at = ?, attempts = attempts + 1, updated_at = ? WHERE id = ? AND dispatched_at IS NULL");
  const markProcessed = sqlite.prepare("UPDATE notification SET stage = 'handed', updated_at = ? WHERE id = ? AND status = 'pending' AND stage = 'queued'");
  const clearCancel = sqlite.prepare("UPDATE notification SET cancel_pending = 0, updated_at = ? WHERE id = ? AND cancel_pending = 1");
  const byPhoneId: Statement<NotificationRecord, [string, number]> = sqlite.prepare(
    "SELECT * FROM notification WHERE external_id = ? AND device_id = ? AND route = 'sms'",
  );
  const becameDue: Statement<{ device_id: number }, [number, number]> = sqlite.prepare(`
    SELECT DISTINCT device_id FROM notification
    WHERE route = 'sms' AND status = 'pending' AND stage = 'queued' AND dispatched_at IS NULL AND next_attempt_at > ? AND next_attempt_at <= ?`);
  let announcedUntil = clock.now();
  const seenEvent = sqlite.prepare("INSERT INTO phone_event (id, device_id, event, received_at) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING");

  /** The device a Bearer device token belongs to; marks it alive. 401 for anything else. */
  function authenticateDevice(headers: Headers): DeviceRow {
    const token = /^Bearer\s+(\S+)$/i.exec(headers.get("authorization") ?? "")?.[1];
    const row = token ? byToken.get(sha256Hex(token)) : null;
    const device = row ? devices.byId(row.id) : null;
    if (!device) throw unauthorized("Unknown or missing device token");
    markAlive(device, headers);
    return device;
  }

  /** Phone routes that carry a body, keyed "METHOD path"; all but registration need a device token. */
  const BODY_ROUTES = new Set(["PATCH /mobile/v1/device", "PATCH /mobile/v1/message", "PATCH /mobile/v1/user/password"]);

  /**
   * Runs before a phone route's body is read: a caller whose headers cannot be right gets its 401
   * without the body being parsed. Lookups only (nothing marked alive, no code consumed, no
   * password hashed); the route checks the credentials fully afterwards.
   */
  function checkBeforeBody(method: string, path: string, headers: Headers, signIn: SignInGuard): void {
    const route = `${method} ${path.replace(/\/+$/, "")}`;
    // Registration is a sign-in: wrong pairing tokens, logins and codes count against the caller.
    if (route === "POST /mobile/v1/device") return signIn(() => checkRegistrationHeaders(headers));
    if (!BODY_ROUTES.has(route)) return;
    const token = /^Bearer\s+(\S+)$/i.exec(headers.get("authorization") ?? "")?.[1];
    if (!token || !byToken.get(sha256Hex(token))) throw unauthorized("Unknown or missing device token");
  }

  function checkRegistrationHeaders(headers: Headers): void {
    const [scheme = "", value = ""] = (headers.get("authorization") ?? "").split(/\s+/, 2);
    switch (scheme.toLowerCase()) {
      case "bearer":
        if (!byPairingToken(value)) throw unauthorized("Unknown pairing token");
        return;
      case "basic":
        if (!wsByLogin.get(Buffer.from(value, "base64").toString("utf8").split(":")[0] ?? "")) throw unauthorized("Wrong login or password");
        return;
      case "code": {
        const code = peekCode.get(secrets.digest(value));
        if (!code || code.expires_at < clock.now()) throw unauthorized("Unknown or expired code");
        return;
      }
    }
    throw unauthorized("Pairing needs Authorization: Bearer <pairing token>, Basic, or Code");
  }

  /** Records contact; a phone coming (back) online is announced as device.online. */
  function markAlive(device: DeviceRow, headers: Headers) {
    presence.run(clock.now(), appVersionOf(headers.get("user-agent")), device.id);
    if (device.presence !== "online") {
      sqlite.transaction(() => {
        setPresence.run("online", device.id);
        events.emit(device.workspaceId, "device.online", deviceEventData(device, clock.now()));
      })();
    }
  }

  function byPairingToken(presented: string): WorkspaceAuthRow | null {
    if (!presented) return null;
    const given = createHash("sha256").update(presented).digest();
    let found: WorkspaceAuthRow | null = null;
    for (const row of allPairing.all()) {
      const stored = createHash("sha256").update(secrets.open(row.pairing_token)).digest();
      if (timingSafeEqual(given, stored) && !found) found = row;
    }
    return found;
  }

  function checkPassword(ws: WorkspaceAuthRow | null, password: string): ws is WorkspaceAuthRow {
    return !!ws?.mobile_password_hash && Bun.password.verifySync(password, ws.mobile_password_hash);
  }

  /** Which workspace a registration joins, from its Authorization header. */
  function registrationWorkspace(headers: Headers): { workspaceId: number; basic: boolean } {
    const header = headers.get("authorization") ?? "";
    const [scheme, value = ""] = header.split(/\s+/, 2);
    switch (scheme?.toLowerCase()) {
      case "bearer": {
        const ws = byPairingToken(value);
        if (!ws) throw unauthorized("Unknown pairing token");
        return { workspaceId: ws.id, basic: false };
      }
      case "basic": {
        const [login, ...rest] = Buffer.from(value, "base64").toString("utf8").split(":");
        const ws = wsByLogin.get(login);
        if (!checkPassword(ws, rest.join(":"))) throw unauthorized("Wrong login or password");
        return { workspaceId: ws.id, basic: true };
      }
      case "code": {
        pruneCodes.run(clock.now());
        const row = takeCode.get(secrets.digest(value));
        if (!row || row.expires_at < clock.now()) throw unauthorized("Unknown or expired code");
        return { workspaceId: row.workspace_id, basic: true };
      }
    }
    throw unauthorized("Pairing needs Authorization: Bearer <pairing token>, Basic, or Code");
  }

  /** The workspace's app login, created with its password on first use (the password is shown then only). */
  function credentials(workspaceId: number): { login: string; password?: string } {
    const ws = wsById.get(workspaceId)!;
    if (ws.mobile_login && ws.mobile_password_hash) return { login: ws.mobile_login };
    const login = nanoid(6).toUpperCase().replace(/[^A-Z0-9]/g, "X");
    const password = nanoid(14).toLowerCase();
    setCredentials.run(login, Bun.password.hashSync(password, PASSWORD_HASH), workspaceId);
    return { login, password };
  }

  function register(headers: Headers, body: { name: string; pushToken?: string | null; simCards?: unknown[] }) {
    const { workspaceId, basic } = registrationWorkspace(headers);
    const now = clock.now();
    const id = nanoid(21);
    const token = nanoid(21);
    const created = sqlite.transaction(() => {
      insertDevice.get(
        workspaceId,
        body.name.slice(0, 128),
        id,
        sha256Hex(token),
        body.pushToken ?? null,
        body.simCards ? JSON.stringify(body.simCards) : null,
        appVersionOf(headers.get("user-agent")),
        now,
        now,
        now,
      );
      return credentials(workspaceId);
    })();
    // Signing in with Basic or Code means the user knows the password: it is not shown again.
    return { id, token, login: created.login, ...(created.password && !basic ? { password: created.password } : {}) };
  }

  function presentDevice(d: DeviceRow) {
    return {
      id: d.externalId,
      name: d.name,
      createdAt: iso(d.createdAt),
      updatedAt: iso(d.updatedAt),
      lastSeen: iso(d.lastSeenAt ?? d.createdAt),
      ...(d.simCards ? { simCards: d.simCards } : {}),
    };
  }

  function updateOwnDevice(device: DeviceRow, body: { id?: string; pushToken?: string | null; simCards?: unknown[] }) {
    if (body.id !== undefined && body.id !== device.externalId) throw new AppError("forbidden", "This is not your device");
    // An explicit null clears the push token (the app switched to SSE only).
    const push = body.pushToken === undefined ? device.pushToken : body.pushToken;
    updateDevice.run(push, body.simCards ? JSON.stringify(body.simCards) : null, clock.now(), device.id);
  }

  /**
   * The phone's work: due pending messages, at most 100, never more new ones than its per-minute
   * pacing allows (the rest wait for the next minute), plus "Cancelling" items for apps that
   * understand them. Reading changes no state; it only records when each message was first handed
   * out, for the pacing window.
   */
  function messagesFor(device: DeviceRow, order: "lifo" | "fifo", userAgent: string | null) {
    const now = clock.now();
    const windowStart = now - (now % MINUTE);
    let budget = device.sendLimitPerMinute - handedSince.get(device.id, windowStart)!.n;
    const picked: NotificationRecord[] = [];
    sqlite.transaction(() => {
      for (const n of queued.all(device.id, now)) {
        if (n.dispatched_at === null) {
          if (budget <= 0) continue;
          budget--;
          markHanded.run(now, now, n.id);
        }
        picked.push(n);
      }
    })();
    const items: Record<string, unknown>[] = picked.map((n) => ({
      id: n.external_id,
      message: n.message,
      textMessage: { text: n.message },
      phoneNumbers: [n.recipient],
      isEncrypted: false,
      withDeliveryReport: true,
      priority: 0,
      state: "Pending",
      createdAt: iso(n.created_at),
    }));
    if (isCancelAware(appVersionOf(userAgent))) {
      for (const n of cancelling.all(device.id)) {
        items.push({ id: n.external_id, message: n.message, textMessage: { text: n.message }, phoneNumbers: [n.recipient], state: "Cancelling", createdAt: iso(n.created_at) });
      }
    }
    if (order === "lifo") items.reverse();
    return items.slice(0, MAX_MESSAGES);
  }

  function reasonOf(item: PatchItem): { code: string; reason: string } {
    const error = item.recipients?.find((r) => r.error)?.error ?? null;
    const code = /RESULT_ERROR_[A-Z_]+/.exec(error ?? "")?.[0] ?? (error === "TTL expired" ? "ttl_expired" : "carrier_rejected");
    return { code, reason: error ?? "the phone reported the message failed" };
  }

  /** Applies one phone report (PATCH /message item or a status webhook) to its notification. */
  function applyState(device: DeviceRow, phoneId: string, rawState: string, item: PatchItem, via: string) {
    const n = byPhoneId.get(phoneId, device.id);
    if (!n) return;
    const s = (rawState === "Pending" ? "Processed" : rawState) as PhoneState;
    const at = (name: string) => {
      const t = Date.parse(item.states?.[name] ?? "");
      return Number.isNaN(t) ? undefined : t;
    };
    const detail = `${via}: ${s}`;
    switch (s) {
      case "Processed":
        if (markProcessed.run(clock.now(), n.id).changes > 0) state.log(n.id, "processed", { status: "pending", detail: `${detail} (the phone has it)`, at: at("Processed") });
        return;
      // What the phone did is the truth, even about a message cancelled while it held it.
      case "Sent":
        applyReport(state, n.id, { status: "sent", at: at("Sent"), detail }, { overridesCancel: true });
        return;
      case "Delivered":
        applyReport(state, n.id, { status: "delivered", at: at("Delivered"), sentAt: at("Sent"), detail }, { overridesCancel: true });
        return;
      case "Failed": {
        const { code, reason } = reasonOf(item);
        applyReport(state, n.id, { status: "failed", at: at("Failed"), errorCode: code, reason, detail: `${detail}: ${reason}` }, { overridesCancel: true });
        return;
      }
      case "Cancelled":
        if (n.status === "cancelled") {
          if (clearCancel.run(clock.now(), n.id).changes > 0) state.log(n.id, "cancel_confirmed", { status: "cancelled", detail: `${detail} (the phone dropped it)` });
        } else {
          applyReport(state, n.id, { status: "cancelled", reason: "cancelled on the phone", detail });
        }
        return;
    }
  }

  function patchMessages(device: DeviceRow, items: PatchItem[]) {
    sqlite.transaction(() => {
      for (const item of items) applyState(device, item.id, item.state, item, "phone report");
    })();
  }

  function settings(device: DeviceRow) {
    let key = device.webhookKey;
    if (!key) {
      key = nanoid(16);
      setKey.run(secrets.seal(key), device.id);
      key = devices.byId(device.id)?.webhookKey ?? key;
    }
    return {
      messages: {
        send_interval_min: device.sendIntervalMin,
        send_interval_max: device.sendIntervalMax,
        limit_period: "PerMinute",
        limit_value: device.sendLimitPerMinute,
        sim_selection_mode: "OSDefault",
        processing_order: "FIFO",
      },
      ping: { interval_seconds: 60 },
      webhooks: { internet_required: true, retry_count: 15, signing_key: key },
      gateway: { notification_channel: "SSE_ONLY" },
    };
  }

  /** The webhooks the phone should call; remembers the address served, to notice when it changes. */
  function webhooks(device: DeviceRow, baseUrl: string) {
    if ((device.config as { webhookBase?: string } | null)?.webhookBase !== baseUrl) {
      devices.update(device.id, { config: { ...(device.config ?? {}), webhookBase: baseUrl } });
    }
    return PHONE_WEBHOOK_EVENTS.map((event) => ({
      id: `pigeon-${event.replace(":", "-")}`,
      deviceId: null,
      url: baseUrl + PHONE_WEBHOOK_PATH,
      event,
    }));
  }

  function oneTimeCode(headers: Headers) {
    const [scheme, value = ""] = (headers.get("authorization") ?? "").split(/\s+/, 2);
    if (scheme?.toLowerCase() !== "basic") throw unauthorized("Needs Basic login:password");
    const [login, ...rest] = Buffer.from(value, "base64").toString("utf8").split(":");
    const ws = wsByLogin.get(login);
    if (!checkPassword(ws, rest.join(":"))) throw unauthorized("Wrong login or password");
    const code = String(Math.floor(100000 + Math.random() * 900000));
    const validUntil = clock.now() + CODE_TTL_MS;
    insertCode.run(secrets.digest(code), ws.id, validUntil);
    return { code, validUntil: iso(validUntil) };
  }

  function changePassword(device: DeviceRow, body: { currentPassword: string; newPassword: string }) {
    const ws = wsById.get(device.workspaceId)!;
    if (!checkPassword(ws, body.currentPassword)) throw unauthorized("Current password is wrong");
    if (body.newPassword.length < 14) {
      throw new AppError("validation_error", "newPassword must be at least 14 characters", { field: "newPassword", location: "body", reason: "must be at least 14 characters" });
    }
    setPassword.run(Bun.password.hashSync(body.newPassword, PASSWORD_HASH), ws.id);
  }

  /**
   * A webhook the phone posted: X-Signature must be hex HMAC-SHA256 of the raw body followed by
   * X-Timestamp, keyed with the device's provisioned key; the timestamp must be recent; an event id
   * seen before changes nothing.
   */
  function receiveWebhook(raw: string, headers: Headers): { duplicate: boolean } {
    let body: { id?: unknown; event?: unknown; deviceId?: unknown; payload?: Record<string, unknown> };
    try {
      body = JSON.parse(raw);
    } catch {
      throw new AppError("invalid_json", "Webhook body is not JSON");
    }
    const row = typeof body.deviceId === "string" ? byExternal.get(body.deviceId) : null;
    const device = row ? devices.byId(row.id) : null;
    if (!device?.webhookKey) throw unauthorized("Unknown device or no signing key provisioned");
    const timestamp = headers.get("x-timestamp") ?? "";
    const signature = headers.get("x-signature") ?? "";
    const expected = createHmac("sha256", device.webhookKey).update(raw + timestamp).digest("hex");
    if (signature.length !== expected.length || !timingSafeEqual(Buffer.from(signature), Buffer.from(expected))) {
      throw unauthorized("Bad X-Signature");
    }
    const seconds = Number(timestamp);
    if (!/^\d+$/.test(timestamp) || Math.abs(clock.now() / 1000 - seconds) > WEBHOOK_SKEW_S) {
      throw new AppError("validation_error", "X-Timestamp is missing or too far from the server's clock (replay refused)", { field: "X-Timestamp", location: "headers" });
    }
    if (typeof body.id !== "string" || typeof body.event !== "string" || !body.payload || typeof body.payload !== "object") {
      throw new AppError("validation_error", "Webhook needs id, event and payload", { field: "body", location: "body" });
    }
    const now = clock.now();
    markAlive(device, headers);
    return sqlite.transaction(() => {
      if (seenEvent.run(body.id as string, device.id, body.event as string, now).changes === 0) return { duplicate: true };
      handleEvent(device, body.event as string, body.payload!);
      return { duplicate: false };
    })();
  }

  function handleEvent(device: DeviceRow, event: string, p: Record<string, unknown>) {
    const text = (k: string) => (typeof p[k] === "string" ? (p[k] as string) : null);
    const messageId = text("messageId");
    switch (event) {
      case "sms:received": {
        const sender = text("sender") ?? text("phoneNumber");
        const body = text("message");
        if (!sender || body === null) return;
        const from = toE164(sender) ?? sender;
        const at = Date.parse(text("receivedAt") ?? "") || clock.now();
        recordInbound(threads, events, { workspaceId: device.workspaceId, channel: "sms", deviceId: device.id, from, body, externalId: messageId, at });
        return;
      }
      case "sms:sent":
      case "sms:delivered":
      case "sms:failed":
      case "sms:cancelled": {
        if (!messageId) return;
        const name = { "sms:sent": "Sent", "sms:delivered": "Delivered", "sms:failed": "Failed", "sms:cancelled": "Cancelled" }[event];
        const at = text("sentAt") ?? text("deliveredAt") ?? text("failedAt") ?? text("cancelledAt");
        const item: PatchItem = {
          id: messageId,
          state: name,
          recipients: [{ state: name, error: text("reason") }],
          states: at ? { [name]: at } : {},
        };
        applyState(device, messageId, name, item, `phone webhook ${event}`);
        return;
      }
    }
  }

  /** devices:watch-presence — phones silent for 5 minutes are announced as device.offline, once. */
  function watchPresence(): number {
    const now = clock.now();
    const quiet = wentQuiet.all(now - OFFLINE_AFTER_MS);
    for (const { id } of quiet) {
      const device = devices.byId(id);
      if (!device) continue;
      sqlite.transaction(() => {
        setPresence.run("offline", id);
        events.emit(device.workspaceId, "device.offline", deviceEventData(device, now));
      })();
    }
    return quiet.length;
  }

  /** phones:announce-due — scheduled messages that fell due since the last run: tell their phones. */
  function announceDue(): number {
    const now = clock.now();
    const due = becameDue.all(announcedUntil, now);
    announcedUntil = now;
    for (const { device_id } of due) hub.enqueued(device_id);
    return due.length;
  }

  /**
   * An event stream opened. If Pigeon's address changed since the phone last read its webhooks
   * (a new PIGEON_PUBLIC_URL), the phone is told to read them again.
   */
  function openEvents(device: DeviceRow, baseUrl: string): ReadableStream<Uint8Array> {
    const stream = hub.open(device.id);
    const served = (device.config as { webhookBase?: string } | null)?.webhookBase;
    if (served && served !== baseUrl) queueMicrotask(() => hub.notify(device.id, "WebhooksUpdated"));
    return stream;
  }

  return {
    announceDue,
    openEvents,
    watchPresence,
    authenticateDevice,
    checkBeforeBody,
    register,
    presentDevice,
    updateOwnDevice,
    messagesFor,
    patchMessages,
    settings,
    webhooks,
    oneTimeCode,
    changePassword,
    receiveWebhook,
  };
}

export type MobileService = ReturnType<typeof createMobileService>;
