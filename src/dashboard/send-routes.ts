// The Send page: the form, its live preview and template fields (htmx fragments), and the send
// itself through the same preparation and acceptance as the API's send.
import { Elysia } from "elysia";
import type { DeliveryType } from "../core/kinds";
import { declaredAuth } from "../http/declared-auth";
import { AppError } from "../core/errors";
import { countSegments } from "../lib/segments";
import { toE164In } from "../lib/phone";
import type { SendInput } from "../modules/sending/types";
import type { TemplateRow } from "../modules/templates/model";
import { renderTemplate } from "../modules/templates/variables";
import type { Services } from "../services-type";
import type { Kit, Signed } from "./kit";
import { emptySendForm, previewFragment, sendBody, templateFields, type SendForm } from "./pages/send";
import { utcTime } from "./layout";
import { formOf, fragment, HIDDEN, redirect } from "./web";

/** The form's fields, as posted (or as a query string for the template fields fragment). */
export function sendFormOf(fields: Record<string, string>): SendForm {
  const vars: Record<string, string> = {};
  for (const [k, v] of Object.entries(fields)) if (k.startsWith("var_")) vars[k.slice(4)] = v;
  return {
    channel: fields.channel === "chatapp" ? "chatapp" : "sms",
    recipient: (fields.recipient ?? "").trim(),
    recipient_name: (fields.recipient_name ?? "").trim(),
    template: fields.template ?? "",
    message: fields.message ?? "",
    device: fields.device ?? "",
    schedule: fields.schedule ?? "",
    timezone: fields.timezone || "UTC",
    sim: fields.sim ?? "",
    urgent: fields.urgent === "1",
    vars,
  };
}

/** The form as the send path's input. A datetime-local value becomes the API's "YYYY-MM-DD HH:MM:SS". */
export function inputOf(form: SendForm): SendInput {
  return {
    channel: form.channel as SendInput["channel"],
    recipient: form.recipient,
    message: form.template ? null : form.message,
    templateId: form.template || null,
    variables: form.template ? form.vars : null,
    recipientName: form.recipient_name || null,
    scheduleTime: form.schedule ? `${form.schedule.replace("T", " ")}${form.schedule.length === 16 ? ":00" : ""}` : null,
    timezone: form.schedule ? form.timezone : null,
    deviceId: form.device || null,
    ...(form.channel === "sms" && form.sim ? { simNumber: Number(form.sim) } : {}),
    // The app's expedited priority: past the pacing on Pigeon's side and the phone's.
    ...(form.channel === "sms" && form.urgent ? { priority: 100 } : {}),
  };
}

/** Which form field an error from the send path belongs next to. */
const FIELD_OF: Record<string, string> = {
  recipient_contact: "recipient",
  message: "message",
  schedule_time: "schedule",
  timezone: "schedule",
  device_id: "device",
  sim_number: "sim",
};

/** What these routes use of the services. */
export type DashboardSendRoutesDeps = Pick<
  Services,
  "accounts" | "channels" | "contacts" | "devices" | "safety" | "sending" | "storage" | "templates"
>;

export function dashboardSendRoutes(s: DashboardSendRoutesDeps, kit: Kit) {
  const kindsOf = (channel: string) => s.channels.filter((c) => c.deliveryType === channel).map((c) => c.kind as string);

  async function templatesFor(ws: number, channel: string): Promise<TemplateRow[]> {
    return (await s.templates.records(ws, { channel: channel as DeliveryType, offset: 0, limit: 500 })).rows.filter(
      (t) => t.status !== "inactive",
    );
  }

  async function templateOf(ws: number, ref: string, channel: string): Promise<TemplateRow | null> {
    if (!ref) return null;
    const t = (await s.templates.find(ws, Number(ref))) ?? (await s.templates.findAny(Number(ref)));
    return t && t.channel === channel && (t.workspaceId === null || t.workspaceId === ws) ? t : null;
  }

  async function page(who: Signed, form: SendForm, status = 200, error: string | null = null, fieldError: Record<string, string> = {}) {
    const ws = who.session.workspaceId;
    const kinds = kindsOf(form.channel);
    const devices = (await s.devices.records(ws, false))
      .filter((d) => kinds.includes(d.kind))
      .map((d) => ({ id: d.id, label: `${d.name}${d.phoneNumber ? ` (${d.phoneNumber})` : ""} · ${d.kind}` }));
    const channels = [...new Set(s.channels.map((c) => c.deliveryType))]
      .sort()
      .reverse()
      .map((c) => ({ value: c, label: c === "sms" ? "SMS" : "Chat-app" }));
    const body = sendBody({
      form,
      channels,
      devices,
      templates: await templatesFor(ws, form.channel),
      chosen: await templateOf(ws, form.template, form.channel),
      contacts: (await s.contacts.list(ws, 1, 500)).contacts.map((c) => ({ name: c.name, phone: c.phone })),
      csrf: who.viewer.csrf,
      error,
      fieldError,
    });
    return kit.shell(who, "Send a message", "/dashboard/send", body, status);
  }

  return new Elysia({ name: "pigeon-dashboard-send" })
    .use(declaredAuth())
    .get(
      "/dashboard/send",
      kit.withSession(async ({ request }, who) => {
        const channel = new URL(request.url).searchParams.get("channel") === "chatapp" ? "chatapp" : "sms";
        return page(who, emptySendForm(channel));
      }),
      { auth: "session", ...HIDDEN },
    )
    .get(
      "/dashboard/send/fields",
      kit.withSession(async ({ request }, who) => {
        const form = sendFormOf(Object.fromEntries(new URL(request.url).searchParams));
        return fragment(templateFields(await templateOf(who.session.workspaceId, form.template, form.channel), form, {}));
      }),
      { auth: "session", ...HIDDEN },
    )
    .post(
      "/dashboard/send/preview",
      kit.withSession(async ({ body }, who) => {
        const form = sendFormOf(formOf(body));
        const ws = who.session.workspaceId;
        const template = await templateOf(ws, form.template, form.channel);
        const text = template ? renderTemplate(template.body, form.vars) : form.message;
        const count = form.channel === "sms" ? countSegments(text) : { encoding: "UTF-8", units: [...text].length, segments: 1 };
        // What the real send would say, writing nothing: the first problem, or the cost.
        let problem: string | null = null;
        let cost: number | null = null;
        if (form.recipient && (text || template)) {
          try {
            // Only cloud numbers charge; a free send says nothing about credits.
            cost = (await s.sending.prepare(await s.accounts.callerFor(ws), inputOf(form))).cost || null;
          } catch (error) {
            if (!(error instanceof AppError)) throw error;
            problem = error.message;
          }
        }
        const country = (await s.safety.settings(ws)).defaultCountry;
        const recipient = !form.recipient ? "missing" : toE164In(form.recipient, country) === null ? "bad" : "ok";
        return fragment(previewFragment({ text, ...count, cost, problem, recipient }));
      }),
      { auth: "session", ...HIDDEN },
    )
    .post(
      "/dashboard/send",
      kit.withSession(async ({ body }, who) => {
        const form = sendFormOf(formOf(body));
        const caller = await s.accounts.callerFor(who.session.workspaceId);
        try {
          const prepared = await s.sending.prepare(caller, inputOf(form));
          // As the API does: accepted as a unit of work, on disk before the answer.
          const [result] = await s.storage.transaction(() => s.sending.accept(caller, [prepared]));
          if (!result.ok) throw result.error;
          const id = result.accepted.notificationId;
          await kit.flash(who, {
            kind: "notice",
            text: prepared.scheduleAt ? `Message #${id} scheduled for ${utcTime(prepared.scheduleAt)} UTC.` : `Message #${id} accepted.`,
          });
          return redirect(`/dashboard/messages/${id}`);
        } catch (error) {
          if (!(error instanceof AppError)) throw error;
          const field = FIELD_OF[String(error.data.field ?? "")];
          return page(who, form, error.status, field ? null : error.message, field ? { [field]: error.message } : {});
        }
      }),
      { auth: "session", ...HIDDEN },
    );
}
