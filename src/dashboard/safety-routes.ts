// Safe-sending settings in the dashboard: quiet hours, keywords and their replies, the default
// failover order and whether encrypted sends are allowed, for owners and members alike (as templates and webhooks are). A save is one call
// of the safety service the API's /v1/api/workspace/settings uses, so its checks and messages apply.
import { Elysia } from "elysia";
import { DEVICE_KINDS, ROUTE_DESCRIPTION, ROUTE_NAMES } from "../core/kinds";
import { declaredAuth } from "../http/declared-auth";
import { AppError } from "../core/errors";
import {
  DEFAULT_HELP_KEYWORDS,
  DEFAULT_HELP_REPLY,
  DEFAULT_OPT_IN_KEYWORDS,
  DEFAULT_OPT_IN_REPLY,
  DEFAULT_OPT_OUT_KEYWORDS,
  DEFAULT_OPT_OUT_REPLY,
  ENCRYPTED_SENDS_REASON,
  normalizeKeyword,
  type SettingsChange,
} from "../modules/safety/settings";
import type { Services } from "../services-type";
import type { Kit, Signed } from "./kit";
import { safetyBody, type SafetyErrors, type SafetyForm } from "./pages/safety";
import { formOf, HIDDEN, redirect } from "./web";

/** The API's field names and the form's. */
const FIELDS: Record<string, keyof SafetyErrors> = {
  "quiet_hours.start": "quietStart",
  "quiet_hours.end": "quietEnd",
  quiet_hours: "quiet",
  opt_out_keywords: "optOutKeywords",
  opt_in_keywords: "optInKeywords",
  help_keywords: "helpKeywords",
  opt_out_reply: "optOutReply",
  opt_in_reply: "optInReply",
  help_reply: "helpReply",
  default_routes: "routes",
  default_country: "defaultCountry",
};

/** What the form's fields are called on the page, for messages that name them. */
const LABELS: Record<string, string> = {
  "quiet_hours.start": "From",
  "quiet_hours.end": "Until",
  quiet_hours: "Quiet hours",
  opt_out_keywords: "Opt-out words",
  opt_in_keywords: "Opt-in words",
  help_keywords: "Help words",
  opt_out_reply: "Reply to an opt-out",
  opt_in_reply: "Reply to an opt-in",
  help_reply: "Reply to help",
  default_routes: "Default failover",
  default_country: "Default country",
};

const ROUTES = DEVICE_KINDS.map((k) => ({ name: ROUTE_NAMES[k], about: ROUTE_DESCRIPTION[k] }));

/** A keyword list as typed: words split at commas and line breaks, blanks dropped. */
const words = (text: string) =>
  text
    .split(/[,\r\n]+/)
    .map((w) => w.trim())
    .filter(Boolean);

/**
 * A keyword list for the service: null (follow the defaults, as they are now and later) when it is
 * the default list, as the form shows it unchanged; else the words.
 */
function keywordChange(text: string, defaults: readonly string[]): string[] | null {
  const list = words(text);
  const same = list.length === defaults.length && list.every((w, i) => normalizeKeyword(w) === defaults[i]);
  return same ? null : list;
}

/** A reply for the service: null when it is the default text, so the default keeps applying. */
const replyChange = (text: string, fallback: string) => (text.trim() === fallback ? null : text);

/** The service's error beside the field (or fields) it names, in the page's words. */
function errorsOf(error: AppError): SafetyErrors {
  const sentence = (text: string) => `${text.charAt(0).toUpperCase()}${text.slice(1)}${/[.!?]$/.test(text) ? "" : "."}`;
  if (error.code === "keyword_conflict") {
    const fields = Array.isArray(error.data.fields) ? (error.data.fields as string[]) : [];
    const message = `"${String(error.data.keyword)}" is in both ${fields.map((f) => LABELS[f] ?? f).join(" and ")}; a word can mean one thing only.`;
    const out: SafetyErrors = {};
    for (const f of fields) if (FIELDS[f]) out[FIELDS[f]] = message;
    return Object.keys(out).length ? out : { other: message };
  }
  const field = String(error.data.field ?? "");
  // The API's words for the pair ("use null") do not fit the form.
  if (field === "quiet_hours") return { quiet: "From and Until are the same time; choose different times, or tick No quiet hours." };
  const m = /^Invalid body field '[^']+': (.*)$/.exec(error.message);
  const message = m ? `${LABELS[field] ?? field}: ${m[1]}` : error.message;
  return FIELDS[field] ? { [FIELDS[field]]: sentence(message) } : { other: sentence(message) };
}

/** What these routes use of the services. */
export type DashboardSafetyRoutesDeps = Pick<Services, "safety">;

export function dashboardSafetyRoutes(s: DashboardSafetyRoutesDeps, kit: Kit) {
  /** The form filled with the settings in force. */
  async function saved(workspaceId: number): Promise<SafetyForm> {
    const p = await s.safety.presentSettings(workspaceId);
    const routes = p.default_routes ?? [];
    return {
      quietOff: p.quiet_hours === null,
      quietStart: p.quiet_hours?.start ?? "",
      quietEnd: p.quiet_hours?.end ?? "",
      optOutKeywords: p.opt_out_keywords.join(", "),
      optInKeywords: p.opt_in_keywords.join(", "),
      helpKeywords: p.help_keywords.join(", "),
      optOutReply: p.opt_out_reply,
      optInReply: p.opt_in_reply,
      helpReply: p.help_reply,
      routes: [routes[0] ?? "", routes[1] ?? "", routes[2] ?? ""],
      encryptedSends: p.encrypted_sends,
      defaultCountry: p.default_country ?? "",
    };
  }

  function settingsPage(who: Signed, form: SafetyForm, status = 200, errors?: SafetyErrors) {
    const defaults = { optOut: DEFAULT_OPT_OUT_KEYWORDS, optIn: DEFAULT_OPT_IN_KEYWORDS, help: DEFAULT_HELP_KEYWORDS };
    return kit.shell(
      who,
      "Safe sending",
      "/dashboard/safety",
      safetyBody({ form, errors, routes: ROUTES, defaults, csrf: who.viewer.csrf, encryptedReason: ENCRYPTED_SENDS_REASON }),
      status,
    );
  }

  return new Elysia({ name: "pigeon-dashboard-safety" })
    .use(declaredAuth())
    .get(
      "/dashboard/safety",
      kit.withSession(async (_ctx, who) => settingsPage(who, await saved(who.session.workspaceId))),
      { auth: "session", ...HIDDEN },
    )
    .post(
      "/dashboard/safety",
      kit.withSession(async ({ body }, who) => {
        const f = formOf(body);
        const form: SafetyForm = {
          quietOff: f.quiet_off === "yes",
          quietStart: (f.quiet_start ?? "").trim(),
          quietEnd: (f.quiet_end ?? "").trim(),
          optOutKeywords: f.opt_out_keywords ?? "",
          optInKeywords: f.opt_in_keywords ?? "",
          helpKeywords: f.help_keywords ?? "",
          optOutReply: f.opt_out_reply ?? "",
          optInReply: f.opt_in_reply ?? "",
          helpReply: f.help_reply ?? "",
          routes: [f.route_1 ?? "", f.route_2 ?? "", f.route_3 ?? ""],
          encryptedSends: f.encrypted_sends === "yes",
          defaultCountry: (f.default_country ?? "").trim(),
        };
        const routes = form.routes.filter(Boolean);
        const change: SettingsChange = {
          quiet_hours: form.quietOff ? null : { start: form.quietStart, end: form.quietEnd },
          opt_out_keywords: keywordChange(form.optOutKeywords, DEFAULT_OPT_OUT_KEYWORDS),
          opt_in_keywords: keywordChange(form.optInKeywords, DEFAULT_OPT_IN_KEYWORDS),
          help_keywords: keywordChange(form.helpKeywords, DEFAULT_HELP_KEYWORDS),
          opt_out_reply: replyChange(form.optOutReply, DEFAULT_OPT_OUT_REPLY),
          opt_in_reply: replyChange(form.optInReply, DEFAULT_OPT_IN_REPLY),
          help_reply: replyChange(form.helpReply, DEFAULT_HELP_REPLY),
          default_routes: routes.length ? routes : null,
          encrypted_sends: form.encryptedSends,
          default_country: form.defaultCountry || null,
        };
        try {
          await s.safety.updateSettings(who.session.workspaceId, change);
        } catch (error) {
          if (!(error instanceof AppError) || error.status >= 500) throw error;
          return settingsPage(who, form, error.status, errorsOf(error));
        }
        await kit.flash(who, { kind: "notice", text: "Safe-sending settings saved." });
        return redirect("/dashboard/safety");
      }),
      { auth: "session", ...HIDDEN },
    );
}
