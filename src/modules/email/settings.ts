// A workspace's email bridge settings (the email_setting table): which part of a mail becomes the
// SMS, the default country national numbers are read in, the secret address, and where received
// messages are forwarded with which Reply-To domain. The secret address is for devices that cannot
// sign in: its token is shown once and kept as a digest. What the bridge sends when no sender
// signed in (the secret address, replies to forwards) goes through the workspace's "Email bridge"
// key, made for it with scope `send`: every limit a key can carry applies, the keys page lists it,
// and disabling it stops both. Only allowed senders may use them.
import { getCountries } from "libphonenumber-js/min";
import { AppError } from "../../core/errors";
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import type { SecretBox } from "../../lib/secrets";
import { randomBase62, sha256Hex } from "../../lib/tokens";
import type { AccountsService } from "../accounts/service";
import { EMAIL_CONTENTS, type EmailContent } from "./content";
import type { EmailRepository, EmailSettingRow as Row } from "./repository";
import { NO_SETTINGS } from "./repository";

/** At most this many entries on a secret address's allowlist. */
export const SENDERS_MAX = 100;
/** The name of the key the bridge sends with when no sender signed in (the secret address, replies). */
export const BRIDGE_KEY_NAME = "Email bridge";
/** At most this many addresses receive the forwards. */
export const FORWARD_TO_MAX = 20;

export interface EmailSettings {
  content: EmailContent;
  defaultCountry: string | null;
  /** Lower-case addresses, or "@domain" for every address of a domain. */
  senders: string[];
  secretAddress: { hint: string; keyId: number | null } | null;
  /** Where every received message is forwarded (lower-case addresses). */
  forwardTo: string[];
  /** The domain of the forwards' Reply-To addresses (one that reaches the listener); null: no Reply-To. */
  replyDomain: string | null;
  /** Delivery status notifications: a mail's sender is told when a send it made fails later. */
  dsn: boolean;
  /** forward_to is told of every message that fails. */
  forwardFailures: boolean;
}

/** The credentials the bridge sends with for a workspace when no sender signed in. */
export interface BridgeCredentials {
  apiKey: string;
  apiSecret: string;
}

/** What the listener needs to send for a secret address: its workspace, key and senders. */
export interface SecretAddress {
  workspaceId: number;
  apiKey: string;
  apiSecret: string;
  senders: string[];
  content: EmailContent;
  defaultCountry: string | null;
}

const COUNTRIES = new Set<string>(getCountries());
const ADDRESS_FORM = /^[^\s@<>"]+@[a-z0-9.-]+\.[a-z]{2,}$/;
const DOMAIN_FORM = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$/;
const SENDER_FORM = /^(@[a-z0-9.-]+\.[a-z]{2,}|[^\s@<>]+@[a-z0-9.-]+\.[a-z]{2,})$/;

function parseList(json: string): string[] {
  try {
    const list = JSON.parse(json);
    return Array.isArray(list) ? list.filter((s): s is string => typeof s === "string") : [];
  } catch {
    return [];
  }
}

function viewOf(row: Row | null): EmailSettings {
  if (!row)
    return {
      content: "body",
      defaultCountry: null,
      senders: [],
      secretAddress: null,
      forwardTo: [],
      replyDomain: null,
      dsn: false,
      forwardFailures: false,
    };
  return {
    content: (EMAIL_CONTENTS as readonly string[]).includes(row.content) ? (row.content as EmailContent) : "body",
    defaultCountry: row.defaultCountry,
    senders: parseList(row.senders),
    secretAddress: row.secretHash ? { hint: row.secretHint ?? "", keyId: row.keyId } : null,
    forwardTo: parseList(row.forwardTo),
    replyDomain: row.replyDomain,
    dsn: Number(row.dsn) === 1,
    forwardFailures: Number(row.forwardFailures) === 1,
  };
}

/** Whether `sender` (an address) is on `senders`: the address itself, or its domain as "@domain". */
export function senderAllowed(senders: readonly string[], sender: string): boolean {
  const address = sender.trim().toLowerCase();
  const domain = address.slice(address.lastIndexOf("@"));
  return address.includes("@") && senders.some((entry) => entry === address || (entry.startsWith("@") && entry === domain));
}

export interface EmailSettingsDeps {
  storage: Storage;
  repo: EmailRepository;
  clock: Clock;
  secrets: SecretBox;
  accounts: Pick<AccountsService, "createKey" | "keyById" | "setKeyStatus">;
}

/** A reply address's parts: the thread, and the device and SIM the customer wrote to. */
export interface ReplyTarget {
  workspaceId: number;
  threadId: number;
  deviceId: number;
  simNumber: number | null;
}

const REPLY_FORM = /^reply-(\d+)-(\d+)-(\d+)-(\d+)-([0-9a-f]{20})$/i;

export function createEmailSettings(deps: EmailSettingsDeps) {
  const { storage, clock, secrets, accounts } = deps;
  const { repo } = deps;
  const row = (workspaceId: number) => repo.get(workspaceId);

  async function write(workspaceId: number, columns: Partial<Omit<Row, "workspaceId">>): Promise<void> {
    const current = await row(workspaceId);
    await repo.put({ ...NO_SETTINGS, ...current, ...columns, workspaceId }, clock.now());
  }

  /** The workspace's bridge key, made (or enabled again) when it is missing; inside the caller's unit. */
  async function ensureBridgeKey(workspaceId: number): Promise<void> {
    const current = await row(workspaceId);
    let keyId = current?.keyId ?? null;
    let keySecret = current?.keySecret ?? null;
    if (keyId !== null) {
      const key = await accounts.keyById(keyId);
      if (!key || key.workspaceId !== workspaceId) keyId = null;
      else if (key.status !== "active") await accounts.setKeyStatus(String(keyId), "active");
    }
    if (keyId === null || keySecret === null) {
      const created = await accounts.createKey(BRIDGE_KEY_NAME, workspaceId, { scopes: ["send"] });
      keyId = created.key_id;
      keySecret = secrets.seal(created.api_secret);
      await write(workspaceId, { keyId, keySecret });
    }
  }

  /** The bridge key's credentials, or null when it was never made or no longer works. */
  async function bridgeCredentials(found: Row | null): Promise<BridgeCredentials | null> {
    if (!found || found.keyId === null || found.keySecret === null) return null;
    const key = await accounts.keyById(found.keyId);
    if (!key || key.workspaceId !== found.workspaceId) return null;
    return { apiKey: key.key, apiSecret: secrets.open(found.keySecret) };
  }

  const replyMac = (t: Omit<ReplyTarget, never>) =>
    secrets.digest(`email-reply:${t.workspaceId}:${t.threadId}:${t.deviceId}:${t.simNumber ?? 0}`).slice(-20);

  return {
    /** The ports the listener bound (PIGEON_SMTP_PORT=0 picks one), set when it starts; null while it is not listening. */
    listening: { smtp: null as number | null, smtps: null as number | null },

    /** The Reply-To local part for a forward of a message in `t`'s thread (see parseReply). */
    replyLocal: (t: ReplyTarget) => `reply-${t.workspaceId}-${t.threadId}-${t.deviceId}-${t.simNumber ?? 0}-${replyMac(t)}`,

    /** The thread a reply address names, when its digest is right; null otherwise. */
    parseReply(local: string): ReplyTarget | null {
      const m = REPLY_FORM.exec(local);
      if (!m) return null;
      const sim = Number(m[4]);
      const t: ReplyTarget = {
        workspaceId: Number(m[1]),
        threadId: Number(m[2]),
        deviceId: Number(m[3]),
        simNumber: sim === 0 ? null : sim,
      };
      return replyMac(t) === m[5].toLowerCase() ? t : null;
    },

    /** The credentials to send a reply with, made on first use. */
    async replyCredentials(workspaceId: number): Promise<BridgeCredentials | null> {
      await storage.transaction(() => ensureBridgeKey(workspaceId));
      return bridgeCredentials(await row(workspaceId));
    },

    async get(workspaceId: number): Promise<EmailSettings> {
      return viewOf(await row(workspaceId));
    },

    /** Changes what `change` names, each checked; what it leaves undefined stays. */
    async update(
      workspaceId: number,
      change: {
        content?: string;
        defaultCountry?: string | null;
        senders?: string[];
        forwardTo?: string[];
        replyDomain?: string | null;
        dsn?: boolean;
        forwardFailures?: boolean;
      },
    ): Promise<EmailSettings> {
      const columns: Partial<Row> = {};
      if (change.dsn !== undefined) columns.dsn = change.dsn ? 1 : 0;
      if (change.forwardFailures !== undefined) columns.forwardFailures = change.forwardFailures ? 1 : 0;
      if (change.forwardTo !== undefined) {
        const list = [...new Set(change.forwardTo.map((a) => String(a).trim().toLowerCase()).filter(Boolean))];
        if (list.length > FORWARD_TO_MAX)
          throw new AppError("validation_error", `forward_to holds at most ${FORWARD_TO_MAX} addresses`, {
            field: "forward_to",
            location: "body",
          });
        const bad = list.find((a) => !ADDRESS_FORM.test(a) || a.length > 254);
        if (bad !== undefined)
          throw new AppError("validation_error", `forward_to: "${bad}" is not an email address`, { field: "forward_to", location: "body" });
        columns.forwardTo = JSON.stringify(list);
      }
      if (change.replyDomain !== undefined) {
        const domain = change.replyDomain?.trim().toLowerCase().replace(/^@/, "") || null;
        if (domain !== null && (!DOMAIN_FORM.test(domain) || domain.length > 200))
          throw new AppError("validation_error", `reply_domain must be a domain name (e.g. sms.example.com), got "${change.replyDomain}"`, {
            field: "reply_domain",
            location: "body",
          });
        columns.replyDomain = domain;
      }
      if (change.content !== undefined) {
        if (!(EMAIL_CONTENTS as readonly string[]).includes(change.content))
          throw new AppError("validation_error", `content must be one of ${EMAIL_CONTENTS.join(", ")}`, {
            field: "content",
            location: "body",
          });
        columns.content = change.content;
      }
      if (change.defaultCountry !== undefined) {
        const country = change.defaultCountry?.trim().toUpperCase() || null;
        if (country !== null && !COUNTRIES.has(country))
          throw new AppError(
            "validation_error",
            `default_country must be an ISO 3166 two-letter country code (e.g. US, GB, DE), got "${change.defaultCountry}"`,
            {
              field: "default_country",
              location: "body",
            },
          );
        columns.defaultCountry = country;
      }
      if (change.senders !== undefined) {
        const senders = [...new Set(change.senders.map((s) => String(s).trim().toLowerCase()).filter(Boolean))];
        if (senders.length > SENDERS_MAX)
          throw new AppError("validation_error", `senders holds at most ${SENDERS_MAX} entries`, { field: "senders", location: "body" });
        const bad = senders.find((s) => !SENDER_FORM.test(s) || s.length > 254);
        if (bad !== undefined)
          throw new AppError("validation_error", `senders: "${bad}" is neither an email address nor "@domain"`, {
            field: "senders",
            location: "body",
          });
        columns.senders = JSON.stringify(senders);
      }
      await storage.transaction(() => write(workspaceId, columns));
      return viewOf(await row(workspaceId));
    },

    /**
     * A new secret address token (the old one stops working at once), shown only in this answer.
     * The first one also makes the key its sends go through; later ones keep that key.
     */
    async issueSecretAddress(workspaceId: number): Promise<{ token: string; settings: EmailSettings }> {
      // Starts with a letter, so a token can never be read as a phone number.
      const token = `s${randomBase62(31)}`;
      await storage.transaction(async () => {
        await ensureBridgeKey(workspaceId);
        await write(workspaceId, { secretHash: sha256Hex(token), secretHint: token.slice(-4) });
      });
      return { token, settings: viewOf(await row(workspaceId)) };
    },

    /** Ends the secret address: its token stops working and its key is disabled. */
    async removeSecretAddress(workspaceId: number): Promise<EmailSettings> {
      await storage.transaction(async () => {
        const current = await row(workspaceId);
        if (!current?.secretHash) return;
        if (current.keyId !== null) await accounts.setKeyStatus(String(current.keyId), "disabled").catch(() => undefined);
        await write(workspaceId, { secretHash: null, secretHint: null });
      });
      return viewOf(await row(workspaceId));
    },

    /** Whether any workspace lets `sender` write without signing in (else MAIL FROM needs AUTH). */
    async anyAllows(sender: string): Promise<boolean> {
      return (await repo.unsignedSenders()).some((json) => senderAllowed(parseList(json), sender));
    },

    /** The secret address a token opens, with what it sends with; null for an unknown token. */
    async secretAddress(token: string): Promise<SecretAddress | null> {
      const found = await repo.bySecretHash(sha256Hex(token));
      const credentials = await bridgeCredentials(found);
      if (!found || !credentials) return null;
      const view = viewOf(found);
      return {
        workspaceId: found.workspaceId,
        ...credentials,
        senders: view.senders,
        content: view.content,
        defaultCountry: view.defaultCountry,
      };
    },
  };
}

export type EmailSettingsService = ReturnType<typeof createEmailSettings>;
