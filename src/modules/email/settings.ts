// A workspace's email bridge settings (the email_setting table): which part of a mail becomes the
// SMS, the default country national numbers are read in, and the secret address. The secret
// address is for devices that cannot sign in: its token is shown once and kept as a digest; the
// sends it makes go through an API key made for it (scope `send`, named "Email secret address"),
// so every limit a key can carry applies, the keys page lists it, and disabling that key stops the
// address. Only the senders on its allowlist may use it.
import { getCountries } from "libphonenumber-js/min";
import { AppError } from "../../core/errors";
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import type { SecretBox } from "../../lib/secrets";
import { randomBase62, sha256Hex } from "../../lib/tokens";
import type { AccountsService } from "../accounts/service";
import { EMAIL_CONTENTS, type EmailContent } from "./content";
import { createEmailRepository, type EmailSettingRow as Row, NO_SETTINGS } from "./repository";

/** At most this many entries on a secret address's allowlist. */
export const SENDERS_MAX = 100;
/** The name of the key a secret address sends with. */
export const SECRET_ADDRESS_KEY_NAME = "Email secret address";

export interface EmailSettings {
  content: EmailContent;
  defaultCountry: string | null;
  /** Lower-case addresses, or "@domain" for every address of a domain. */
  senders: string[];
  secretAddress: { hint: string; keyId: number | null } | null;
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
const SENDER_FORM = /^(@[a-z0-9.-]+\.[a-z]{2,}|[^\s@<>]+@[a-z0-9.-]+\.[a-z]{2,})$/;

function parseSenders(json: string): string[] {
  try {
    const list = JSON.parse(json);
    return Array.isArray(list) ? list.filter((s): s is string => typeof s === "string") : [];
  } catch {
    return [];
  }
}

function viewOf(row: Row | null): EmailSettings {
  if (!row) return { content: "body", defaultCountry: null, senders: [], secretAddress: null };
  return {
    content: (EMAIL_CONTENTS as readonly string[]).includes(row.content) ? (row.content as EmailContent) : "body",
    defaultCountry: row.defaultCountry,
    senders: parseSenders(row.senders),
    secretAddress: row.secretHash ? { hint: row.secretHint ?? "", keyId: row.keyId } : null,
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
  clock: Clock;
  secrets: SecretBox;
  accounts: Pick<AccountsService, "createKey" | "keyById" | "setKeyStatus">;
}

export function createEmailSettings(deps: EmailSettingsDeps) {
  const { storage, clock, secrets, accounts } = deps;
  const repo = createEmailRepository(storage);
  const row = (workspaceId: number) => repo.get(workspaceId);

  async function write(workspaceId: number, columns: Partial<Omit<Row, "workspaceId">>): Promise<void> {
    const current = await row(workspaceId);
    await repo.put({ ...NO_SETTINGS, ...current, ...columns, workspaceId }, clock.now());
  }

  return {
    async get(workspaceId: number): Promise<EmailSettings> {
      return viewOf(await row(workspaceId));
    },

    /** Changes what `change` names, each checked; what it leaves undefined stays. */
    async update(
      workspaceId: number,
      change: { content?: string; defaultCountry?: string | null; senders?: string[] },
    ): Promise<EmailSettings> {
      const columns: Partial<Row> = {};
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
        const current = await row(workspaceId);
        let keyId = current?.keyId ?? null;
        let keySecret = current?.keySecret ?? null;
        if (keyId !== null) {
          const key = await accounts.keyById(keyId);
          if (!key || key.workspaceId !== workspaceId) keyId = null;
          else if (key.status !== "active") await accounts.setKeyStatus(String(keyId), "active");
        }
        if (keyId === null || keySecret === null) {
          const created = await accounts.createKey(SECRET_ADDRESS_KEY_NAME, workspaceId, { scopes: ["send"] });
          keyId = created.key_id;
          keySecret = secrets.seal(created.api_secret);
        }
        await write(workspaceId, { secretHash: sha256Hex(token), secretHint: token.slice(-4), keyId, keySecret });
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

    /** Whether `sender` is on the allowlist of any workspace's secret address (else MAIL FROM needs AUTH). */
    async anyAllows(sender: string): Promise<boolean> {
      return (await repo.secretAllowlists()).some((json) => senderAllowed(parseSenders(json), sender));
    },

    /** The secret address a token opens, with what it sends with; null for an unknown token. */
    async secretAddress(token: string): Promise<SecretAddress | null> {
      const found = await repo.bySecretHash(sha256Hex(token));
      if (!found || found.keyId === null || found.keySecret === null) return null;
      const key = await accounts.keyById(found.keyId);
      if (!key || key.workspaceId !== found.workspaceId) return null;
      const view = viewOf(found);
      return {
        workspaceId: found.workspaceId,
        apiKey: key.key,
        apiSecret: secrets.open(found.keySecret),
        senders: view.senders,
        content: view.content,
        defaultCountry: view.defaultCountry,
      };
    },
  };
}

export type EmailSettingsService = ReturnType<typeof createEmailSettings>;
