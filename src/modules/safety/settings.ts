// A workspace's safe-sending settings: their defaults, how a change is checked, and how they read
// in the API. Stored columns are null for "the default", so a workspace that never changed a
// setting follows the defaults as they are now.
import { t } from "elysia";
import { DEVICE_KINDS, kindOfRoute, ROUTE_NAME_LIST, ROUTE_NAMES, type DeviceKind } from "../../core/kinds";
import { AppError } from "../../core/errors";
import { isSupportedCountry } from "libphonenumber-js/min";
import { formatClock, parseClock } from "../../lib/quiet-hours";
import { resolveTimeZone } from "../../core/schedule";
import type { SettingsValues } from "./repository";

export const DEFAULT_OPT_OUT_KEYWORDS = ["STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT"];
export const DEFAULT_OPT_IN_KEYWORDS = ["START", "UNSTOP", "YES"];
export const DEFAULT_HELP_KEYWORDS = ["HELP", "INFO"];
export const DEFAULT_OPT_OUT_REPLY = "You are unsubscribed and will get no more messages from us. Reply START to subscribe again.";
export const DEFAULT_OPT_IN_REPLY = "You are subscribed again. Reply STOP to unsubscribe.";
export const DEFAULT_HELP_REPLY = "Reply STOP to unsubscribe, or START to subscribe again.";

const KEYWORD_MAX = 32;
const KEYWORDS_MAX = 50;
const REPLY_MAX = 640;

/** The settings in force for a workspace, defaults filled in. */
export interface SafetySettings {
  /** Minutes after local midnight; null when there are no quiet hours. */
  quietHours: { start: number; end: number } | null;
  optOutKeywords: string[];
  optInKeywords: string[];
  helpKeywords: string[];
  /** Empty: no reply. */
  optOutReply: string;
  optInReply: string;
  helpReply: string;
  defaultRoutes: DeviceKind[] | null;
  /** The workspace's own IANA zone (its inbound rules' business hours); UTC unless set. */
  timeZone: string;
  /** ISO 3166 alpha-2, upper case: the country a number without its country code is read in; null: none. */
  defaultCountry: string | null;
  /** End-to-end encrypted sends allowed: off unless the workspace turns them on (their recipients cannot be checked). */
  encryptedSends: boolean;
}

/**
 * How a keyword and an inbound text are compared: Unicode-normalised, every space removed, upper
 * case. "Stop", " stop " and "S T O P" all read STOP; "stop please" does not.
 */
export function normalizeKeyword(text: string): string {
  return text.normalize("NFKC").replace(/\s+/gu, "").toUpperCase();
}

export function settingsFrom(row: SettingsValues | null): SafetySettings {
  const start = row?.quietStart ? parseClock(row.quietStart) : null;
  const end = row?.quietEnd ? parseClock(row.quietEnd) : null;
  return {
    quietHours: start !== null && end !== null ? { start, end } : null,
    optOutKeywords: row?.optOutKeywords ?? DEFAULT_OPT_OUT_KEYWORDS,
    optInKeywords: row?.optInKeywords ?? DEFAULT_OPT_IN_KEYWORDS,
    helpKeywords: row?.helpKeywords ?? DEFAULT_HELP_KEYWORDS,
    optOutReply: row?.optOutReply ?? DEFAULT_OPT_OUT_REPLY,
    optInReply: row?.optInReply ?? DEFAULT_OPT_IN_REPLY,
    helpReply: row?.helpReply ?? DEFAULT_HELP_REPLY,
    defaultRoutes: row?.defaultRoutes ?? null,
    timeZone: row?.timeZone ?? "UTC",
    defaultCountry: row?.defaultCountry ?? null,
    encryptedSends: row?.encryptedSends ?? false,
  };
}

export function presentSettings(s: SafetySettings) {
  return {
    quiet_hours: s.quietHours ? { start: formatClock(s.quietHours.start), end: formatClock(s.quietHours.end) } : null,
    opt_out_keywords: s.optOutKeywords,
    opt_in_keywords: s.optInKeywords,
    help_keywords: s.helpKeywords,
    opt_out_reply: s.optOutReply,
    opt_in_reply: s.optInReply,
    help_reply: s.helpReply,
    default_routes: s.defaultRoutes?.map((k) => ROUTE_NAMES[k]) ?? null,
    time_zone: s.timeZone,
    default_country: s.defaultCountry,
    encrypted_sends: s.encryptedSends,
  };
}

/** The API's change: every field optional; null resets a field to its default (quiet hours: none). */
export interface SettingsChange {
  quiet_hours?: { start: string; end: string } | null;
  opt_out_keywords?: string[] | null;
  opt_in_keywords?: string[] | null;
  help_keywords?: string[] | null;
  opt_out_reply?: string | null;
  opt_in_reply?: string | null;
  help_reply?: string | null;
  default_routes?: string[] | null;
  time_zone?: string | null;
  default_country?: string | null;
  encrypted_sends?: boolean | null;
}

function invalid(field: string, reason: string, extra: Record<string, unknown> = {}): AppError {
  return new AppError("validation_error", `Invalid body field '${field}': ${reason}`, { field, location: "body", reason, ...extra });
}

function keywords(field: string, input: string[]): string[] {
  const out: string[] = [];
  for (const raw of input) {
    const word = normalizeKeyword(raw);
    if (word === "") throw invalid(field, "a keyword must not be blank");
    if ([...word].length > KEYWORD_MAX) throw invalid(field, `a keyword is at most ${KEYWORD_MAX} characters`, { keyword: raw });
    if (!out.includes(word)) out.push(word);
  }
  if (out.length > KEYWORDS_MAX) throw invalid(field, `at most ${KEYWORDS_MAX} keywords`);
  return out;
}

function reply(field: string, input: string): string {
  const text = input.trim();
  if ([...text].length > REPLY_MAX) throw invalid(field, `at most ${REPLY_MAX} characters`);
  return text;
}

/** The API names of routes, for the docs. */
export const ROUTE_NAMES_DOC = ROUTE_NAME_LIST.join(", ");

/** A `routes` list in route names, checked: known names, each once, 1 to 3 of them. */
export function parseRoutes(field: string, input: readonly string[]): DeviceKind[] {
  if (input.length === 0) throw invalid(field, "name at least one route");
  const kinds: DeviceKind[] = [];
  for (const name of input) {
    const kind = typeof name === "string" ? kindOfRoute(name) : null;
    if (!kind) throw invalid(field, `unknown route "${String(name)}"; routes are ${ROUTE_NAMES_DOC}`, { route: name });
    if (kinds.includes(kind)) throw invalid(field, `route "${name}" is named twice`, { route: name });
    kinds.push(kind);
  }
  if (kinds.length > DEVICE_KINDS.length) throw invalid(field, `at most ${DEVICE_KINDS.length} routes`);
  return kinds;
}

/**
 * Applies a change to the stored values, checking it. Quiet hours need both ends as HH:MM and
 * different; a keyword may not be in two lists (one text would mean two things).
 */
export function applyChange(row: SettingsValues | null, change: SettingsChange): SettingsValues {
  // A workspace that never saved its rules stores nothing: every default applies.
  const values: SettingsValues = row
    ? { ...row }
    : {
        quietStart: null,
        quietEnd: null,
        optOutKeywords: null,
        optInKeywords: null,
        helpKeywords: null,
        optOutReply: null,
        optInReply: null,
        helpReply: null,
        defaultRoutes: null,
        timeZone: null,
        defaultCountry: null,
        encryptedSends: null,
      };
  if (change.quiet_hours !== undefined) {
    if (change.quiet_hours === null) {
      values.quietStart = values.quietEnd = null;
    } else {
      const start = parseClock(change.quiet_hours.start);
      const end = parseClock(change.quiet_hours.end);
      if (start === null) throw invalid("quiet_hours.start", 'must be a 24-hour time "HH:MM", e.g. "21:00"');
      if (end === null) throw invalid("quiet_hours.end", 'must be a 24-hour time "HH:MM", e.g. "08:00"');
      if (start === end) throw invalid("quiet_hours", "start and end are the same time; use null for no quiet hours");
      values.quietStart = formatClock(start);
      values.quietEnd = formatClock(end);
    }
  }
  if (change.opt_out_keywords !== undefined)
    values.optOutKeywords = change.opt_out_keywords === null ? null : keywords("opt_out_keywords", change.opt_out_keywords);
  if (change.opt_in_keywords !== undefined)
    values.optInKeywords = change.opt_in_keywords === null ? null : keywords("opt_in_keywords", change.opt_in_keywords);
  if (change.help_keywords !== undefined)
    values.helpKeywords = change.help_keywords === null ? null : keywords("help_keywords", change.help_keywords);
  if (change.opt_out_reply !== undefined)
    values.optOutReply = change.opt_out_reply === null ? null : reply("opt_out_reply", change.opt_out_reply);
  if (change.opt_in_reply !== undefined)
    values.optInReply = change.opt_in_reply === null ? null : reply("opt_in_reply", change.opt_in_reply);
  if (change.help_reply !== undefined) values.helpReply = change.help_reply === null ? null : reply("help_reply", change.help_reply);
  if (change.default_routes !== undefined)
    values.defaultRoutes = change.default_routes === null ? null : parseRoutes("default_routes", change.default_routes);

  if (change.time_zone !== undefined) {
    const zone = change.time_zone?.trim() || null;
    if (zone !== null && resolveTimeZone(zone) === null)
      throw new AppError("invalid_timezone", `time_zone "${zone}" is not an IANA time zone name (e.g. Europe/Berlin)`, {
        field: "time_zone",
      });
    values.timeZone = zone === null ? null : resolveTimeZone(zone);
  }

  if (change.default_country !== undefined) values.defaultCountry = parseCountry("default_country", change.default_country);

  if (change.encrypted_sends !== undefined) values.encryptedSends = change.encrypted_sends;

  const lists: [string, string[]][] = [
    ["opt_out_keywords", values.optOutKeywords ?? DEFAULT_OPT_OUT_KEYWORDS],
    ["opt_in_keywords", values.optInKeywords ?? DEFAULT_OPT_IN_KEYWORDS],
    ["help_keywords", values.helpKeywords ?? DEFAULT_HELP_KEYWORDS],
  ];
  for (let i = 0; i < lists.length; i++) {
    for (let j = i + 1; j < lists.length; j++) {
      const both = lists[i][1].find((w) => lists[j][1].includes(w));
      if (both)
        throw new AppError(
          "keyword_conflict",
          `"${both}" is in both ${lists[i][0]} and ${lists[j][0]}; a keyword can mean one thing only`,
          { keyword: both, fields: [lists[i][0], lists[j][0]] },
        );
    }
  }
  return values;
}

/** A country setting checked: an ISO 3166 alpha-2 code with a numbering plan, upper-cased; blank or null is none. */
export function parseCountry(field: string, input: string | null): string | null {
  const code = input?.trim().toUpperCase() || null;
  if (code !== null && !isSupportedCountry(code))
    throw new AppError(
      "invalid_country",
      `${field} "${input}" is not an ISO 3166 two-letter country code with a numbering plan (e.g. US, DE)`,
      {
        field,
      },
    );
  return code;
}

/** Why encrypted sends are off until a workspace turns them on: said wherever the switch is. */
export const ENCRYPTED_SENDS_REASON =
  "Pigeon cannot read an end-to-end encrypted recipient, so it cannot check it against your opt-outs (STOP replies), " +
  "quiet hours or rules: turn this on only if you check opt-outs yourself before you encrypt.";

const ENCRYPTED_SENDS_DOC =
  "Allow end-to-end encrypted SMS (`encrypted: true`, SMSGate's `isEncrypted`). Off by default, and a send is then 403 `encrypted_sends_disabled`. " +
  `${ENCRYPTED_SENDS_REASON} null restores the default (off).`;

const DEFAULT_COUNTRY_DOC =
  "ISO 3166 two-letter code of the country in which a number written without its country code is read " +
  "(`030 1234567` with DE is +49301234567): by the API's sends, SMPP's `submit_sm` and the email bridge. " +
  "null (the default): a number needs its country code. 400 `invalid_country` for an unknown code.";

const Clock = t.String({ description: "24-hour local time HH:MM", examples: ["21:00"] });
const KeywordList = t.Array(t.String({ maxLength: 64 }), {
  maxItems: KEYWORDS_MAX,
  description:
    "Whole-message keywords, matched case- and space-insensitively; an empty list turns the rule off, null restores the defaults",
});
const ReplyText = t.String({
  maxLength: REPLY_MAX * 4,
  description: `At most ${REPLY_MAX} characters; an empty string sends no reply, null restores the default`,
});
const RouteList = t.Array(t.String({ examples: ["phone"] }), {
  minItems: 1,
  maxItems: 3,
  description: `Failover order, routes from: ${ROUTE_NAME_LIST.join(", ")} (phone and sms are the same route)`,
  examples: [["phone", "cloud"]],
});

export const SettingsBody = t.Object(
  {
    quiet_hours: t.Optional(
      t.Nullable(
        t.Object(
          { start: Clock, end: Clock },
          {
            additionalProperties: false,
            description: "In the recipient's local time; start after end wraps past midnight. null: no quiet hours",
          },
        ),
      ),
    ),
    opt_out_keywords: t.Optional(t.Nullable(KeywordList)),
    opt_in_keywords: t.Optional(t.Nullable(KeywordList)),
    help_keywords: t.Optional(t.Nullable(KeywordList)),
    opt_out_reply: t.Optional(t.Nullable(ReplyText)),
    opt_in_reply: t.Optional(t.Nullable(ReplyText)),
    help_reply: t.Optional(t.Nullable(ReplyText)),
    default_routes: t.Optional(t.Nullable(RouteList)),
    time_zone: t.Optional(
      t.Nullable(
        t.String({
          maxLength: 64,
          description: "The workspace's own IANA time zone, read by inbound rules' business hours; null restores UTC",
          examples: ["Europe/Berlin"],
        }),
      ),
    ),
    default_country: t.Optional(t.Nullable(t.String({ maxLength: 8, description: DEFAULT_COUNTRY_DOC, examples: ["DE"] }))),
    encrypted_sends: t.Optional(t.Nullable(t.Boolean({ description: ENCRYPTED_SENDS_DOC }))),
  },
  {
    additionalProperties: false,
    examples: [{ quiet_hours: { start: "21:00", end: "08:00" } }, { quiet_hours: null }, { opt_out_keywords: ["STOP", "ARRET", "BAJA"] }],
  },
);

export const Settings = t.Object({
  quiet_hours: t.Nullable(t.Object({ start: Clock, end: Clock })),
  opt_out_keywords: t.Array(t.String()),
  opt_in_keywords: t.Array(t.String()),
  help_keywords: t.Array(t.String()),
  opt_out_reply: t.String(),
  opt_in_reply: t.String(),
  help_reply: t.String(),
  default_routes: t.Nullable(t.Array(t.String())),
  time_zone: t.String({ description: "The workspace's own IANA time zone (UTC unless set)" }),
  default_country: t.Nullable(t.String({ description: DEFAULT_COUNTRY_DOC })),
  encrypted_sends: t.Boolean({ description: ENCRYPTED_SENDS_DOC }),
});
