// What an API key may do, and the rules that follow from it: its scopes, whom it may send to, how
// many sends a UTC day, and until when. The domain's own vocabulary: routes declare the scope they
// need (http/declared-auth.ts), the accounts module stores a key's limits, the sending path enforces
// the recipients and the cap. Pure functions only, so each rule can be tested alone.
import { AppError } from "./errors";
import { toE164 } from "../lib/phone";

/**
 * The scopes a key can hold. `admin` is every power the API has (settings, webhooks, pools,
 * rules, privacy, keys): a key with it may also manage keys, so it can make one with any scope.
 */
export const KEY_SCOPES = ["send", "messages:read", "threads:read", "contacts", "templates", "devices", "admin"] as const;
export type KeyScope = (typeof KEY_SCOPES)[number];

/** What each scope lets a key do, for --help, the docs and the dashboard. */
export const SCOPE_DESCRIPTIONS: Record<KeyScope, string> = {
  send: "send messages (SMS, chat-app, templates, verification codes), preview and cancel them",
  "messages:read": "read sent messages, their status and statistics, and SMSGate's inbox",
  "threads:read": "read conversations and mark them read",
  contacts: "read and change contacts and their tags",
  templates: "read and change message templates",
  devices: "list, register, pair and change devices",
  admin: "everything else (workspace settings, webhooks, pools, rules, opt-outs, privacy, keys); implies every scope",
};

/** A route a key can reach needs one scope; `null` marks one any valid key may call (SMSGate's token routes). */
export type RouteScope = KeyScope | null;

/** Whom a key may send to. */
export type RecipientPolicy =
  | { kind: "anyone" }
  | { kind: "contacts" }
  | { kind: "tag"; tag: string }
  | { kind: "numbers"; numbers: string[] };

/** A key's limits as a caller carries them (AuthContext.limits). */
export interface KeyLimits {
  /** null: every scope. */
  scopes: KeyScope[] | null;
  recipients: RecipientPolicy;
  /** Sends a UTC day; null, no cap. */
  dailyCap: number | null;
  /** ms since the epoch; null, never. */
  expiresAt: number | null;
}

/** A key with no limits: every scope, anyone, no cap, no expiry (keys made before limits existed). */
export const UNLIMITED: KeyLimits = { scopes: null, recipients: { kind: "anyone" }, dailyCap: null, expiresAt: null };

/** Whether `limits` allow `scope`: every scope when the key names none, and `admin` implies them all. */
export function hasScope(limits: KeyLimits | undefined, scope: KeyScope): boolean {
  const scopes = limits?.scopes;
  return !scopes || scopes.includes("admin") || scopes.includes(scope);
}

/** 403 key_scope_denied unless `limits` allow `scope`. */
export function requireKeyScope(limits: KeyLimits | undefined, scope: KeyScope): void {
  if (hasScope(limits, scope)) return;
  throw new AppError("key_scope_denied", `This API key lacks the scope "${scope}"`, { scope, key_scopes: limits?.scopes ?? [] });
}

/** Scopes from a comma-separated list or an array; 400 on an unknown one, each kept once, in the table's order. */
export function parseScopes(input: string | readonly string[], field = "scopes"): KeyScope[] {
  const given = (typeof input === "string" ? input.split(",") : [...input]).map((s) => s.trim()).filter((s) => s !== "");
  const unknown = given.filter((s) => !(KEY_SCOPES as readonly string[]).includes(s));
  if (unknown.length > 0 || given.length === 0) {
    throw new AppError(
      "validation_error",
      unknown.length > 0
        ? `Unknown scope ${unknown.join(", ")}: one of ${KEY_SCOPES.join(", ")}`
        : `Name at least one scope: ${KEY_SCOPES.join(", ")}`,
      { field, reason: `one of ${KEY_SCOPES.join(", ")}` },
    );
  }
  return KEY_SCOPES.filter((s) => given.includes(s));
}

/**
 * A recipient policy from its written form: `anyone`, `contacts`, `tag:<tag>`, or E.164 numbers
 * separated by commas (or given as an array). 400 on anything else.
 */
export function parseRecipients(input: string | readonly string[], field = "recipients"): RecipientPolicy {
  const bad = (reason: string) => new AppError("validation_error", `Invalid ${field}: ${reason}`, { field, reason });
  if (typeof input === "string") {
    const text = input.trim();
    if (text === "" || text === "anyone") return { kind: "anyone" };
    if (text === "contacts") return { kind: "contacts" };
    if (text.startsWith("tag:")) {
      const tag = text.slice(4).trim().toLowerCase();
      if (!/^[\p{L}\p{N} _.:-]{1,64}$/u.test(tag)) throw bad(`"${text}" needs a tag of letters, digits, spaces and _ . : -`);
      return { kind: "tag", tag };
    }
    return parseRecipients(text.split(","), field);
  }
  const numbers: string[] = [];
  for (const raw of input) {
    if (raw.trim() === "") continue;
    const phone = toE164(raw.trim());
    if (!phone) throw bad(`"${raw.trim()}" is not an E.164 number (anyone, contacts, tag:<tag>, or +15551234567,+15557654321)`);
    if (!numbers.includes(phone)) numbers.push(phone);
  }
  if (numbers.length === 0) throw bad("name anyone, contacts, tag:<tag>, or at least one number");
  return { kind: "numbers", numbers };
}

/** The policy as stored (the api_key.recipients column): null for anyone. */
export function storedRecipients(policy: RecipientPolicy): string | string[] | null {
  switch (policy.kind) {
    case "anyone":
      return null;
    case "contacts":
      return "contacts";
    case "tag":
      return `tag:${policy.tag}`;
    case "numbers":
      return policy.numbers;
  }
}

/** The stored column read back (null, or a value written by storedRecipients). */
export function recipientsOf(stored: string | string[] | null | undefined): RecipientPolicy {
  if (stored === null || stored === undefined) return { kind: "anyone" };
  try {
    return parseRecipients(stored);
  } catch {
    // A value this code did not write allows no one rather than everyone.
    return { kind: "numbers", numbers: [] };
  }
}

/** The policy as people write it: anyone, contacts, tag:vip, or the numbers with commas. */
export function describeRecipients(policy: RecipientPolicy): string {
  const stored = storedRecipients(policy);
  return stored === null ? "anyone" : Array.isArray(stored) ? stored.join(",") : stored;
}

/** Whether the policy needs the recipient's contact (its tags) to decide. */
export function needsContact(policy: RecipientPolicy): boolean {
  return policy.kind === "contacts" || policy.kind === "tag";
}

/**
 * Whether `policy` lets a key send to `phone` (E.164). `contactTags` is the tags of the workspace's
 * contact with that number, or null when there is none (only read for the contact policies).
 */
export function recipientAllowed(policy: RecipientPolicy, phone: string, contactTags: readonly string[] | null): boolean {
  switch (policy.kind) {
    case "anyone":
      return true;
    case "contacts":
      return contactTags !== null;
    case "tag":
      return contactTags?.includes(policy.tag) === true;
    case "numbers":
      return policy.numbers.includes(phone);
  }
}

/** The 403 of a recipient the key may not send to, naming it and the policy. */
export function recipientRefused(policy: RecipientPolicy, recipient: string): AppError {
  const why =
    policy.kind === "contacts"
      ? "only to the workspace's contacts"
      : policy.kind === "tag"
        ? `only to contacts tagged "${policy.tag}"`
        : "only to the numbers it lists";
  return new AppError("recipient_not_allowed", `This API key may not send to ${recipient}: it may send ${why}`, {
    recipient,
    recipients: describeRecipients(policy),
  });
}

const DAY_MS = 24 * 60 * 60 * 1000;

/** The UTC day `at` falls in, as days since the epoch (the api_key_day row's `day`). */
export function utcDay(at: number): number {
  return Math.floor(at / DAY_MS);
}

/** The 403 of a key whose daily cap is used up, with when it resets (the next UTC midnight). */
export function dailyCapReached(cap: number, used: number, now: number): AppError {
  const resets = new Date((utcDay(now) + 1) * DAY_MS).toISOString();
  return new AppError(
    "key_daily_cap",
    `This API key may send ${cap} message${cap === 1 ? "" : "s"} a day (UTC) and has sent ${used}; the count resets at ${resets}`,
    { daily_cap: cap, used, resets_at: resets },
  );
}

/** The 401 of a key past its expiry. */
export function keyExpired(expiresAt: number): AppError {
  return new AppError("key_expired", `This API key expired at ${new Date(expiresAt).toISOString()}`, {
    expired_at: new Date(expiresAt).toISOString(),
  });
}

/**
 * An expiry from its written form: a date (`2027-01-31`, the end of that UTC day, so the key works
 * all of it), an ISO instant with its zone, or a span from `now` (`30d`, `12h`, `90m`); `never`
 * (or empty) for none. 400 otherwise, or when it is not in the future.
 */
export function parseExpiry(input: string, now: number, field = "expires"): number | null {
  const text = input.trim();
  if (text === "" || text === "never") return null;
  const bad = (reason: string) => new AppError("validation_error", `Invalid ${field} "${text}": ${reason}`, { field, reason });
  let at: number;
  const span = /^(\d{1,5})([dhm])$/.exec(text);
  if (span) at = now + Number(span[1]) * { d: DAY_MS, h: 3_600_000, m: 60_000 }[span[2] as "d" | "h" | "m"];
  else if (/^\d{4}-\d{2}-\d{2}$/.test(text)) at = Date.parse(`${text}T00:00:00Z`) + DAY_MS;
  else if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:?\d{2})$/i.test(text)) at = Date.parse(text);
  else throw bad("a date (2027-01-31), an ISO instant with its zone, a span (30d, 12h, 90m) or never");
  if (Number.isNaN(at)) throw bad("not a real date");
  if (at <= now) throw bad("it is not in the future");
  return at;
}

/** A daily cap from its written form: a whole number from 1, or `none`/empty for none. */
export function parseDailyCap(input: string | number | null, field = "daily_cap"): number | null {
  if (input === null) return null;
  const text = String(input).trim();
  if (text === "" || text === "none") return null;
  if (!/^\d{1,9}$/.test(text) || Number(text) < 1)
    throw new AppError("validation_error", `Invalid ${field} "${text}": a whole number from 1, or none`, {
      field,
      reason: "a whole number from 1",
    });
  return Number(text);
}
