// Bulk sends from a CSV file. The upload is parsed and kept as a draft for this session (30 minutes,
// where any server can read it: scratch.ts); the columns are mapped automatically when the headers name the fields, else the
// user maps them; the preview runs every row through the send path's checks (writing nothing);
// sending takes the draft once (a second click finds none) and accepts the rows in requests of at
// most 100, as the API's bulk send does.
import { Elysia } from "elysia";
import type { DeliveryType } from "../core/kinds";
import { declaredAuth } from "../http/declared-auth";
import { AppError } from "../core/errors";
import { parseCsv } from "../lib/csv";
import { randomBase62 } from "../lib/tokens";
import { newPrepareCache, type Prepared, type SendInput } from "../modules/sending/types";
import type { TemplateRow } from "../modules/templates/model";
import { parseTemplateBody, renderTemplate } from "../modules/templates/variables";
import type { Services } from "../services-type";
import type { Kit, Signed } from "./kit";
import { mappingBody, previewBody, resultBody, uploadBody, type BulkUploadForm, type PreviewRow } from "./pages/bulk";
import { formOf, HIDDEN, redirect } from "./web";

const MAX_ROWS = 10_000;
const CHUNK = 100;
const DRAFT_MS = 30 * 60_000;
const PREVIEW_ROWS = 5;
/** Headers taken as the phone column without asking. */
const PHONE_HEADERS = ["phone", "phone_number", "mobile", "number", "to"];

interface Draft {
  headers: string[];
  /** Data rows with their line in the file. */
  rows: { line: number; cells: string[] }[];
  form: BulkUploadForm;
  template: TemplateRow | null;
  /** The fields a row must give: phone, name, then the variables. */
  needed: string[];
}

/** What these routes use of the services. */
export type DashboardBulkRoutesDeps = Pick<Services, "accounts" | "channels" | "clock" | "devices" | "sending" | "storage" | "templates">;

export function dashboardBulkRoutes(s: DashboardBulkRoutesDeps, kit: Kit) {
  const drafts = kit.scratch;
  const draftKey = (id: string) => `bulk:${id}`;

  async function draftOf(who: Signed, id: string | undefined): Promise<Draft | null> {
    return id ? drafts.get<Draft>(draftKey(id), who.session.id) : null;
  }

  async function devicesFor(ws: number, channel: string) {
    const kinds = s.channels.filter((c) => c.deliveryType === channel).map((c) => c.kind as string);
    return (await s.devices.records(ws, false))
      .filter((d) => kinds.includes(d.kind))
      .map((d) => ({ id: d.id, label: `${d.name} · ${d.kind}` }));
  }

  async function upload(who: Signed, form: BulkUploadForm, status = 200, error: string | null = null) {
    const ws = who.session.workspaceId;
    const templates = (await s.templates.records(ws, { offset: 0, limit: 500 })).rows.filter((t) => t.status === "active");
    const devices = [...(await devicesFor(ws, "sms")), ...(await devicesFor(ws, "chatapp"))];
    return kit.shell(
      who,
      "Bulk send from a CSV file",
      "/dashboard/send",
      uploadBody({ form, templates, devices, csrf: who.viewer.csrf, error }),
      status,
    );
  }

  /** Field → column index, from the form's map_<field> choices, else from the headers. */
  function mappingOf(draft: Draft, fields: Record<string, string>): Record<string, string> {
    const mapping: Record<string, string> = {};
    const lower = draft.headers.map((h) => h.trim().toLowerCase());
    for (const field of draft.needed) {
      const chosen = fields[`map_${field}`];
      if (chosen !== undefined) {
        mapping[field] = chosen;
        continue;
      }
      const candidates = field === "phone" ? PHONE_HEADERS : [field.toLowerCase()];
      const index = lower.findIndex((h) => candidates.includes(h));
      if (index >= 0) mapping[field] = String(index);
    }
    return mapping;
  }

  const missingOf = (draft: Draft, mapping: Record<string, string>) => draft.needed.filter((f) => f !== "name" && mapping[f] === undefined);

  /** A row as the send path's input. */
  function inputOf(draft: Draft, mapping: Record<string, string>, cells: string[]): SendInput {
    const cell = (field: string) => {
      const index = mapping[field];
      return index === undefined || index === "" ? "" : (cells[Number(index)] ?? "").trim();
    };
    // Every field is a variable too: {{name}} and {{phone}} work in the text and in a template.
    const values = Object.fromEntries(draft.needed.map((v) => [v, cell(v)]));
    const variables = draft.template ? Object.fromEntries(draft.template.variables.map((v) => [v, values[v] ?? ""])) : values;
    return {
      channel: draft.form.channel as DeliveryType,
      recipient: cell("phone"),
      recipientName: cell("name") || null,
      message: draft.template ? null : renderTemplate(draft.form.message, variables),
      templateId: draft.template?.id ?? null,
      variables: draft.template ? variables : null,
      deviceId: draft.form.device || null,
    };
  }

  /** Every row through the send path's checks; nothing is written. */
  async function prepareAll(who: Signed, draft: Draft, mapping: Record<string, string>) {
    const caller = await s.accounts.callerFor(who.session.workspaceId);
    const seen = newPrepareCache();
    const checked: { line: number; input: SendInput; prepared: Prepared | null; error: string | null }[] = [];
    for (const { line, cells } of draft.rows) {
      const input = inputOf(draft, mapping, cells);
      try {
        checked.push({ line, input, prepared: await s.sending.prepare(caller, input, seen), error: null });
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        checked.push({ line, input, prepared: null, error: error.message });
      }
    }
    return checked;
  }

  async function preview(who: Signed, id: string, draft: Draft, mapping: Record<string, string>) {
    const checked = await prepareAll(who, draft, mapping);
    const row = (c: (typeof checked)[number]): PreviewRow => ({
      line: c.line,
      recipient: String(c.input.recipient),
      text: c.prepared?.message ?? null,
      error: c.error,
    });
    const body = previewBody({
      draft: id,
      mapping,
      first: checked.slice(0, PREVIEW_ROWS).map(row),
      failing: checked.filter((c) => c.error !== null).map(row),
      total: checked.length,
      valid: checked.filter((c) => c.prepared).length,
      cost: checked.reduce((sum, c) => sum + (c.prepared?.cost ?? 0), 0),
      csrf: who.viewer.csrf,
    });
    return kit.shell(who, "Check before sending", "/dashboard/send", body);
  }

  return new Elysia({ name: "pigeon-dashboard-bulk" })
    .use(declaredAuth())
    .get(
      "/dashboard/bulk",
      kit.withSession(async (_ctx, who) => upload(who, { channel: "sms", template: "", message: "", device: "" })),
      { auth: "session", ...HIDDEN },
    )
    .post(
      "/dashboard/bulk",
      kit.withSession(async ({ body }, who) => {
        const f = formOf(body);
        const form: BulkUploadForm = {
          channel: f.channel === "chatapp" ? "chatapp" : "sms",
          template: f.template ?? "",
          message: f.message ?? "",
          device: f.device ?? "",
        };
        const again = (error: string) => upload(who, form, 400, error);
        let table: string[][];
        try {
          table = parseCsv(f.csv ?? "");
        } catch (error) {
          return again(`The file is not valid CSV: ${(error as Error).message}.`);
        }
        if (table.length < 2) return again("The file needs a header row and at least one row of data.");
        if (table.length - 1 > MAX_ROWS) return again(`The file has ${table.length - 1} rows; at most ${MAX_ROWS} at a time.`);
        const ws = who.session.workspaceId;
        let template: TemplateRow | null = null;
        if (form.template) {
          const t = (await s.templates.find(ws, Number(form.template))) ?? (await s.templates.findAny(Number(form.template)));
          if (!t || (t.workspaceId !== null && t.workspaceId !== ws)) return again("That template is not one of this workspace's.");
          if (t.channel !== form.channel)
            return again(`That template is for ${t.channel === "sms" ? "SMS" : "the chat-app channel"}; choose that channel.`);
          template = t;
        } else if (!form.message.trim()) {
          return again("Write the text, or choose a template.");
        }
        let variables: string[];
        try {
          variables = template ? template.variables : parseTemplateBody(form.message, "sms");
        } catch (error) {
          if (error instanceof AppError) return again(error.message);
          throw error;
        }
        const [headers, ...rest] = table;
        // Line numbers as a spreadsheet shows them: the header is line 1.
        const rows = rest.map((cells, i) => ({ line: i + 2, cells }));
        const draft: Draft = {
          headers,
          rows,
          form,
          template,
          needed: ["phone", "name", ...variables.filter((v) => v !== "phone" && v !== "name")],
        };
        const id = randomBase62(24);
        await drafts.put(draftKey(id), who.session.id, draft, DRAFT_MS);
        const mapping = mappingOf(draft, {});
        if (missingOf(draft, mapping).length > 0) {
          return kit.shell(
            who,
            "Match the columns",
            "/dashboard/send",
            mappingBody({ draft: id, headers, needed: draft.needed, mapping, csrf: who.viewer.csrf }),
          );
        }
        return preview(who, id, draft, mapping);
      }),
      { auth: "session", ...HIDDEN },
    )
    .post(
      "/dashboard/bulk/preview",
      kit.withSession(async ({ body }, who) => {
        const f = formOf(body);
        const draft = await draftOf(who, f.draft);
        if (!draft)
          return upload(
            who,
            { channel: "sms", template: "", message: "", device: "" },
            410,
            "That upload has expired or was already sent; upload the file again.",
          );
        const mapping = mappingOf(draft, f);
        const bad = Object.entries(mapping).find(
          ([, column]) => column !== "" && !(Number(column) >= 0 && Number(column) < draft.headers.length),
        );
        if (bad || missingOf(draft, mapping).length > 0) {
          return kit.shell(
            who,
            "Match the columns",
            "/dashboard/send",
            mappingBody({
              draft: f.draft!,
              headers: draft.headers,
              needed: draft.needed,
              mapping,
              csrf: who.viewer.csrf,
              error: "Choose a column for every field.",
            }),
            400,
          );
        }
        return preview(who, f.draft!, draft, mapping);
      }),
      { auth: "session", ...HIDDEN },
    )
    .post(
      "/dashboard/bulk/send",
      kit.withSession(async ({ body }, who) => {
        const f = formOf(body);
        // Taken once: a second click, or a reload, finds nothing to send (whichever server it reaches).
        const draft = f.draft ? await drafts.take<Draft>(draftKey(f.draft), who.session.id) : null;
        if (!draft) {
          await kit.flash(who, { kind: "error", text: "That upload was already sent or has expired: nothing more was sent." });
          return redirect("/dashboard/messages");
        }
        const mapping = mappingOf(draft, f);
        const caller = await s.accounts.callerFor(who.session.workspaceId);
        const failed: PreviewRow[] = [];
        let accepted = 0;
        let requests = 0;
        for (let i = 0; i < draft.rows.length; i += CHUNK) {
          const chunk = draft.rows.slice(i, i + CHUNK);
          const seen = newPrepareCache();
          const items: (Prepared | AppError)[] = [];
          for (const { cells } of chunk) {
            try {
              items.push(await s.sending.prepare(caller, inputOf(draft, mapping, cells), seen));
            } catch (error) {
              if (!(error instanceof AppError)) throw error;
              items.push(error);
            }
          }
          requests++;
          const results = await s.storage.transaction(() => s.sending.accept(caller, items));
          results.forEach((r, j) => {
            if (r.ok) accepted++;
            else
              failed.push({
                line: chunk[j].line,
                recipient: String(inputOf(draft, mapping, chunk[j].cells).recipient),
                text: null,
                error: r.error.message,
              });
          });
        }
        return kit.shell(who, "Bulk send", "/dashboard/send", resultBody({ accepted, failed, requests }));
      }),
      { auth: "session", ...HIDDEN },
    );
}
