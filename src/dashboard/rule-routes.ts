// Inbound rules in the dashboard: the list in priority order, a new rule (a webhook action's secret
// shown on the next page only), moving a rule up or down, enabling or disabling it, deleting it
// after a confirmation page, and the "would this match?" tester: htmx posts it as a message is
// typed and gets the result alone; without a script the Test button gets the whole page. Everything
// goes through the rules service the API uses, so its checks answer with the same messages.
import { Elysia } from "elysia";
import type { DeliveryType } from "../core/kinds";
import { declaredAuth } from "../http/declared-auth";
import { AppError } from "../core/errors";
import type { RuleAction, RuleInput } from "../modules/rules/service";
import type { Services } from "../services-type";
import { html } from "./html";
import type { Kit, Signed } from "./kit";
import {
  CHANNELS,
  DAYS,
  emptyRuleForm,
  emptyTestForm,
  MATCH_TYPES,
  ruleDeleteBody,
  rulesBody,
  testResult,
  type RuleErrors,
  type RuleForm,
  type RuleView,
  type TestForm,
  type TestResult,
} from "./pages/rules";
import { formOf, fragment, HIDDEN, redirect } from "./web";

/** What these routes use of the services. */
export type DashboardRuleRoutesDeps = Pick<Services, "rules" | "safety" | "templates">;

/** The form field beside which an error of the rules service is shown, by the field it names. */
function fieldOf(field: unknown): keyof RuleErrors {
  const f = typeof field === "string" ? field : "";
  if (f === "name" || f === "channels") return f;
  if (f.startsWith("match")) return "match";
  if (f.startsWith("action.reply")) return "reply";
  if (f.startsWith("action.webhook")) return "webhook";
  if (f.startsWith("action.forward")) return "forward";
  if (f === "action.tag") return "tag";
  if (f.startsWith("action.email")) return "email";
  if (f === "action") return "action";
  if (f === "when.outside_hours.start") return "hoursStart";
  if (f === "when.outside_hours.end") return "hoursEnd";
  if (f === "when.outside_hours.days") return "days";
  if (f.startsWith("when")) return "hours";
  return "other";
}

function ruleFormOf(body: unknown): RuleForm {
  const f = formOf(body);
  const type = MATCH_TYPES.find((t) => t === f.match_type) ?? "keyword";
  return {
    name: (f.name ?? "").trim(),
    matchType: type,
    matchValue: (f.match_value ?? "").trim(),
    caseSensitive: f.case_sensitive === "1",
    channels: CHANNELS.map((c) => c.value).filter((c) => f[`channel:${c}`] === "1"),
    replyText: (f.reply_text ?? "").trim(),
    webhookUrl: (f.webhook_url ?? "").trim(),
    forwardTo: (f.forward_to ?? "").trim(),
    emailTo: (f.email_to ?? "").trim().slice(0, 2000),
    tag: (f.tag ?? "").trim(),
    continueAfter: f.continue === "1",
    hoursStart: (f.hours_start ?? "").trim(),
    hoursEnd: (f.hours_end ?? "").trim(),
    days: DAYS.map((d) => d.value).filter((d) => f[`day:${d}`] === "1"),
  };
}

const keywordsOf = (value: string) => value.split(/[\s,]+/u).filter(Boolean);

/** The checks the API's request schema makes before its service runs, as messages per field. */
function schemaErrors(form: RuleForm): RuleErrors {
  const e: RuleErrors = {};
  if (!form.name || form.name.length > 100) e.name = "Give the rule a name of 1 to 100 characters.";
  if (form.matchType === "keyword") {
    const words = keywordsOf(form.matchValue);
    if (words.length === 0) e.match = "Enter one or more keywords.";
    else if (words.length > 20) e.match = "At most 20 keywords.";
    else if (words.some((w) => w.length > 32)) e.match = "A keyword has at most 32 characters.";
  } else if (form.matchType === "regex") {
    if (!form.matchValue) e.match = "Enter a regular expression.";
    else if (form.matchValue.length > 500) e.match = "A pattern has at most 500 characters.";
  }
  if (form.channels.length === 0) e.channels = "Choose at least one channel.";
  if (!form.replyText && !form.webhookUrl && !form.forwardTo && !form.tag && !form.emailTo)
    e.action = "Give the rule something to do: a reply, a webhook URL, a number to forward to, a tag or an email address.";
  if (form.replyText.length > 1600) e.reply = `The reply is ${form.replyText.length} characters; at most 1600.`;
  if (form.webhookUrl && (form.webhookUrl.length > 2048 || !URL.canParse(form.webhookUrl)))
    e.webhook = "Enter a full URL of at most 2048 characters, such as https://example.com/hooks/rule.";
  if (form.forwardTo.length > 32) e.forward = "A number has at most 32 characters.";
  if (form.tag.length > 50) e.tag = "A tag has at most 50 characters.";
  if (!form.hoursStart !== !form.hoursEnd) e.hours = "Give both the opening and the closing time, or neither.";
  return e;
}

/** The service's input from a checked form. */
function inputOf(form: RuleForm): RuleInput {
  const action: RuleAction = {};
  if (form.replyText) action.reply = { text: form.replyText };
  if (form.webhookUrl) action.webhook = { url: form.webhookUrl };
  if (form.forwardTo) action.forward = { to: form.forwardTo };
  if (form.tag) action.tag = form.tag;
  if (form.emailTo) action.email = { to: form.emailTo.split(/[,;\s]+/).filter(Boolean) };
  const words = keywordsOf(form.matchValue);
  return {
    name: form.name,
    match:
      form.matchType === "any"
        ? { any: true }
        : form.matchType === "regex"
          ? { regex: form.matchValue, ...(form.caseSensitive ? { case_sensitive: true } : {}) }
          : { keyword: words.length === 1 ? words[0] : words },
    // Every channel ticked: every channel, also one added later.
    channels: form.channels.length === CHANNELS.length ? null : (form.channels as RuleInput["channels"]),
    action,
    continue: form.continueAfter,
    when: form.hoursStart ? { outside_hours: { start: form.hoursStart, end: form.hoursEnd, days: form.days } } : null,
  };
}

function testFormOf(body: unknown): TestForm {
  const f = formOf(body);
  return {
    body: (f.body ?? "").slice(0, 4096),
    from: (f.from ?? "").trim(),
    channel: CHANNELS.some((c) => c.value === f.channel) ? f.channel! : "sms",
  };
}

export function dashboardRuleRoutes(s: DashboardRuleRoutesDeps, kit: Kit) {
  /** Template names by id, for rules that reply with one (made through the API). */
  async function templateNames(ws: number, rules: RuleView[]) {
    const names = new Map<number, string>();
    for (const r of rules) {
      const id = (r.action as RuleAction).reply?.template_id;
      if (id !== undefined && !names.has(id)) {
        const t = await s.templates.require(ws, id).catch(() => null);
        if (t) names.set(id, t.name);
      }
    }
    return (id: number) => names.get(id);
  }

  /** What the tester says about a message: a keyword no rule hears, a refused sender, or the rules it sets off. */
  async function tested(ws: number, t: TestForm): Promise<TestResult> {
    if (t.body.trim() === "") return { kind: "empty" };
    // The opt-out, opt-in and help keywords are answered before the rules (as src/modules/safety/keywords.ts does).
    const keyword = t.body.length <= 64 ? await s.safety.keywordOf(ws, t.body) : null;
    if (keyword !== null) return { kind: "keyword", keyword };
    try {
      const r = await s.rules.test(ws, {
        body: t.body,
        channel: t.channel as DeliveryType,
        ...(t.from ? { from: t.from } : {}),
      });
      return { kind: "matches", ...r };
    } catch (error) {
      if (!(error instanceof AppError) || error.status >= 500) throw error;
      return { kind: "error", message: error.message };
    }
  }

  async function listPage(
    who: Signed,
    opts: { status?: number; form?: RuleForm; errors?: RuleErrors; test?: TestForm; result?: TestResult } = {},
  ) {
    const ws = who.session.workspaceId;
    const { rules } = await s.rules.list(ws);
    const body = rulesBody({
      rules,
      zone: (await s.safety.settings(ws)).timeZone,
      templateName: await templateNames(ws, rules),
      csrf: who.viewer.csrf,
      form: opts.form ?? emptyRuleForm(),
      errors: opts.errors ?? {},
      test: opts.test ?? emptyTestForm(),
      result: opts.result ?? { kind: "empty" },
    });
    return kit.shell(who, "Rules", "/dashboard/rules", body, opts.status);
  }

  /** The rule of this workspace with the id in the path; another workspace's is not found. */
  async function own(who: Signed, raw: string | undefined): Promise<RuleView> {
    const id = Number(raw);
    if (!Number.isSafeInteger(id) || id < 1) throw new AppError("not_found", `rule ${raw} not found`);
    return s.rules.get(who.session.workspaceId, id);
  }

  /** A rule's new webhook subscription has its secret in the answer: shown once, on the next page. */
  async function flashRule(who: Signed, text: string, r: RuleView) {
    const hook = (r.action as { webhook?: { url: string; secret?: string } }).webhook;
    await kit.flash(who, {
      kind: "notice",
      text,
      ...(hook?.secret
        ? {
            secret: {
              title: "Webhook signing secret",
              about: html`For rule "${r.name}", posting to <code>${hook.url}</code>. Check each delivery's <code>X-Pigeon-Signature</code> with it.`,
              secret: hook.secret,
            },
          }
        : {}),
    });
  }

  return (
    new Elysia({ name: "pigeon-dashboard-rules" })
      .use(declaredAuth())
      .get(
        "/dashboard/rules",
        kit.withSession(async (_ctx, who) => listPage(who)),
        { auth: "session", ...HIDDEN },
      )
      .post(
        "/dashboard/rules",
        kit.withSession(async ({ body }, who) => {
          const form = ruleFormOf(body);
          const errors = schemaErrors(form);
          if (Object.keys(errors).length) return listPage(who, { status: 400, form, errors });
          try {
            const made = await s.rules.create(who.session.workspaceId, inputOf(form));
            await flashRule(who, `Rule "${made.name}" created: it is tried after the rules before it.`, made);
            return redirect("/dashboard/rules");
          } catch (error) {
            if (!(error instanceof AppError) || error.status >= 500) throw error;
            return listPage(who, { status: error.status, form, errors: { [fieldOf(error.data.field)]: error.message } });
          }
        }),
        { auth: "session", ...HIDDEN },
      )
      // The tester's address after a plain post: opened again (a bookmark, a reload), the page.
      .get(
        "/dashboard/rules/test",
        kit.withSession(async () => redirect("/dashboard/rules")),
        { auth: "session", ...HIDDEN },
      )
      .post(
        "/dashboard/rules/test",
        kit.withSession(async ({ request, body }, who) => {
          const t = testFormOf(body);
          const result = await tested(who.session.workspaceId, t);
          // htmx asks for the result alone; a plain form post gets the page with it.
          if (request.headers.get("hx-request") !== "true") return listPage(who, { test: t, result });
          const ws = who.session.workspaceId;
          const { rules } = await s.rules.list(ws);
          return fragment(testResult(result, rules, await templateNames(ws, rules)));
        }),
        { auth: "session", ...HIDDEN },
      )
      .post(
        "/dashboard/rules/:id/move",
        kit.withSession(async ({ params, body }, who) => {
          const r = await own(who, params?.id);
          const ids = (await s.rules.list(who.session.workspaceId)).rules.map((x) => x.rule_id);
          const at = ids.indexOf(r.rule_id);
          const to = formOf(body).direction === "up" ? at - 1 : at + 1;
          if (to >= 0 && to < ids.length) {
            [ids[at], ids[to]] = [ids[to], ids[at]];
            await s.rules.reorder(who.session.workspaceId, ids);
          }
          await kit.flash(who, {
            kind: "notice",
            text: `Rule "${r.name}" is now tried ${ordinal(Math.min(Math.max(to, 0), ids.length - 1) + 1)}.`,
          });
          return redirect("/dashboard/rules");
        }),
        { auth: "session", ...HIDDEN },
      )
      .post(
        "/dashboard/rules/:id/enabled",
        kit.withSession(async ({ params, body }, who) => {
          const r = await own(who, params?.id);
          const enabled = formOf(body).enabled === "1";
          try {
            const changed = await s.rules.update(who.session.workspaceId, r.rule_id, { enabled });
            await flashRule(
              who,
              enabled
                ? `Rule "${r.name}" enabled: messages that come in are checked against it.`
                : `Rule "${r.name}" disabled: it is skipped.`,
              changed,
            );
          } catch (error) {
            if (!(error instanceof AppError) || error.status >= 500) throw error;
            await kit.flash(who, { kind: "error", text: `Rule "${r.name}" was not changed: ${error.message}` });
          }
          return redirect("/dashboard/rules");
        }),
        { auth: "session", ...HIDDEN },
      )
      .get(
        "/dashboard/rules/:id/delete",
        kit.withSession(async ({ params }, who) => {
          const r = await own(who, params?.id);
          return kit.shell(who, "Delete a rule", "/dashboard/rules", ruleDeleteBody({ r, csrf: who.viewer.csrf }));
        }),
        { auth: "session", ...HIDDEN },
      )
      .post(
        "/dashboard/rules/:id/delete",
        kit.withSession(async ({ params }, who) => {
          const r = await own(who, params?.id);
          await s.rules.remove(who.session.workspaceId, r.rule_id);
          await kit.flash(who, { kind: "notice", text: `Rule "${r.name}" deleted.` });
          return redirect("/dashboard/rules");
        }),
        { auth: "session", ...HIDDEN },
      )
  );
}

/** 1st, 2nd, 3rd, 4th… */
function ordinal(n: number): string {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13 ? "th" : (["th", "st", "nd", "rd"][n % 10] ?? "th");
  return `${n}${suffix}`;
}
