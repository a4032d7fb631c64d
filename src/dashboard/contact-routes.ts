// Contacts in the dashboard: the paged list and its search, create, edit, delete after a
// confirmation page, CSV export of every contact and CSV import. Each write, an imported row's too,
// is one call of the contacts service the API uses, so a row is stored whole or not at all.
import { Elysia } from "elysia";
import { declaredAuth } from "../http/declared-auth";
import { AppError } from "../core/errors";
import { csvCell, parseCsv } from "../lib/csv";
import type { Services } from "../services-type";
import type { Kit, Signed } from "./kit";
import {
  contactDeleteBody,
  contactFormBody,
  contactsBody,
  emptyContactForm,
  importBody,
  type ContactForm,
  type Rejected,
} from "./pages/contacts";
import { csvDownload, formOf, HIDDEN, redirect } from "./web";

const PAGE_SIZE = 25;
const EXPORT_CHUNK = 1000;
const IMPORT_MAX_ROWS = 5000;
const COLUMNS = ["name", "phone", "email", "type"] as const;
/** The API's length limits on a contact's fields. */
const MAX_LENGTH: Record<(typeof COLUMNS)[number], number> = { name: 200, phone: 32, email: 254, type: 64 };
const LABEL: Record<string, string> = { name: "Name", phone: "Phone", email: "Email", type: "Type", timezone: "Time zone" };
/** A time zone name's length limit (the longest IANA name is 32 characters). */
const TIMEZONE_MAX = 64;

/** Which form field an error of the contacts service belongs next to. */
function fieldOf(error: AppError): string | null {
  if (error.code === "duplicate_contact" || error.code === "invalid_phone_number") return "phone";
  if (error.code === "invalid_timezone") return "timezone";
  const field = String(error.data.field ?? "");
  return field in LABEL ? field : null;
}

/** The service's message, without the API's "Invalid body field 'x':" framing a person does not need. */
function readable(error: AppError): string {
  const m = /^Invalid body field '(\w+)': (.*)$/.exec(error.message);
  return m ? `${LABEL[m[1]] ?? m[1]}: ${m[2]}` : error.message;
}

/** What the API's request schema refuses before its service runs: a field over its length. */
function tooLong(form: ContactForm): { field: string; message: string } | null {
  for (const key of COLUMNS) {
    if (form[key].length > MAX_LENGTH[key]) return { field: key, message: `${LABEL[key]}: at most ${MAX_LENGTH[key]} characters.` };
  }
  if (form.timezone.length > TIMEZONE_MAX) return { field: "timezone", message: `${LABEL.timezone}: at most ${TIMEZONE_MAX} characters.` };
  return null;
}

/**
 * An uploaded CSV file's records, or the message that says why there are none: no file (or an
 * empty one, `emptyMessage`), or text that is not CSV.
 */
export function uploadedCsv(body: unknown, emptyMessage: string): { records: { line: number; cells: string[] }[] } | { error: string } {
  const text = formOf(body).file ?? "";
  if (!text.trim()) return { error: emptyMessage };
  try {
    return { records: csvRecords(text) };
  } catch (error) {
    return { error: `The file is not valid CSV: ${(error as Error).message}.` };
  }
}

/**
 * The records of a CSV text with the line each starts on (1 is the header), so a report can point
 * at the line a person sees in an editor: blank lines are skipped but counted, and a quoted field
 * may run over several lines. Throws as parseCsv does on a quote left open.
 */
export function csvRecords(text: string): { line: number; cells: string[] }[] {
  const lines = text.replace(/^\uFEFF/, "").split(/\r\n|\n|\r/);
  const out: { line: number; cells: string[] }[] = [];
  let pending: string[] = [];
  let start = 0;
  let quoted = false;
  for (let i = 0; i < lines.length; i++) {
    if (!pending.length) start = i + 1;
    pending.push(lines[i]);
    // Whether the record is still inside a quoted field at this line's end, by parseCsv's rule: a
    // quote opens a field only at its start, and "" inside one is a quote.
    const line = lines[i];
    for (let j = 0, fieldStart = !quoted; j < line.length; j++) {
      const ch = line[j];
      if (quoted) {
        if (ch === '"' && line[j + 1] === '"') j++;
        else if (ch === '"') quoted = false;
      } else if (ch === '"' && fieldStart) quoted = true;
      fieldStart = !quoted && ch === ",";
    }
    if (quoted) continue;
    const [cells] = parseCsv(pending.join("\n"));
    if (cells) out.push({ line: start, cells });
    pending = [];
  }
  if (quoted) throw new Error(`the quoted field that starts on line ${start} is not closed`);
  return out;
}

/** What these routes use of the services. */
export type DashboardContactRoutesDeps = Pick<Services, "clock" | "contacts">;

export function dashboardContactRoutes(s: DashboardContactRoutesDeps, kit: Kit) {
  const types = async () => (await s.contacts.types()).types;

  async function formPage(
    who: Signed,
    id: number | undefined,
    form: ContactForm,
    status = 200,
    errors: Record<string, string> = {},
    error: string | null = null,
  ) {
    const title = id === undefined ? "New contact" : `Edit ${form.name || "contact"}`;
    return kit.shell(
      who,
      title,
      "/dashboard/contacts",
      contactFormBody({ id, form, types: await types(), csrf: who.viewer.csrf, errors, error }),
      status,
    );
  }

  /** Runs a service write; an error it raises comes back as the form with the message beside its field. */
  async function attempt(who: Signed, id: number | undefined, form: ContactForm, write: () => Promise<unknown>): Promise<Response | null> {
    const long = tooLong(form);
    if (long) return formPage(who, id, form, 400, { [long.field]: long.message });
    try {
      await write();
      return null;
    } catch (error) {
      if (!(error instanceof AppError) || error.status >= 500 || error.status === 404) throw error;
      const field = fieldOf(error);
      return formPage(who, id, form, error.status, field ? { [field]: readable(error) } : {}, field ? null : readable(error));
    }
  }

  async function importPage(
    who: Signed,
    status = 200,
    error: string | null = null,
    report: { imported: number; rejected: Rejected[] } | null = null,
  ) {
    return kit.shell(
      who,
      "Import contacts",
      "/dashboard/contacts",
      importBody({ csrf: who.viewer.csrf, types: await types(), maxRows: IMPORT_MAX_ROWS, error, report }),
      status,
    );
  }

  const contactFormOf = (body: unknown): ContactForm => {
    const f = formOf(body);
    return {
      name: (f.name ?? "").trim(),
      phone: (f.phone ?? "").trim(),
      email: (f.email ?? "").trim(),
      type: (f.type ?? "").trim(),
      timezone: (f.timezone ?? "").trim(),
    };
  };

  return new Elysia({ name: "pigeon-dashboard-contacts" })
    .use(declaredAuth())
    .get(
      "/dashboard/contacts",
      kit.withSession(async ({ request }, who) => {
        const ws = who.session.workspaceId;
        const url = new URL(request.url);
        const query = (url.searchParams.get("q") ?? "").trim();
        const requested = Number(url.searchParams.get("page") ?? "1");
        let page = Number.isSafeInteger(requested) && requested >= 1 ? requested : 1;
        const error = query.length > 200 ? "Search for at most 200 characters." : null;
        const fetch = async (p: number) =>
          error
            ? { contacts: [], pagination: { total: 0 } }
            : query
              ? await s.contacts.search(ws, query, p, PAGE_SIZE)
              : await s.contacts.list(ws, p, PAGE_SIZE);
        let result = await fetch(page);
        const pages = Math.max(1, Math.ceil(result.pagination.total / PAGE_SIZE));
        // A page past the end (the list shrank, or a hand-edited link) shows the last one.
        if (page > pages) {
          page = pages;
          result = await fetch(page);
        }
        const body = contactsBody({ rows: result.contacts, total: result.pagination.total, page, pages, query: error ? "" : query, error });
        return kit.shell(who, "Contacts", "/dashboard/contacts", body, error ? 400 : 200);
      }),
      { auth: "session", ...HIDDEN },
    )
    .get(
      "/dashboard/contacts/new",
      kit.withSession(async (_ctx, who) => formPage(who, undefined, emptyContactForm())),
      { auth: "session", ...HIDDEN },
    )
    .post(
      "/dashboard/contacts",
      kit.withSession(async ({ body }, who) => {
        const form = contactFormOf(body);
        const failed = await attempt(who, undefined, form, () =>
          s.contacts.create(who.session.workspaceId, {
            name: form.name,
            phone: form.phone,
            ...(form.email ? { email: form.email } : {}),
            ...(form.type ? { type: form.type } : {}),
            timezone: form.timezone || null,
          }),
        );
        if (failed) return failed;
        await kit.flash(who, { kind: "notice", text: `Contact ${form.name} created.` });
        return redirect("/dashboard/contacts");
      }),
      { auth: "session", ...HIDDEN },
    )
    .get(
      "/dashboard/contacts/export.csv",
      kit.withSession(async (_ctx, who) => {
        const ws = who.session.workspaceId;
        let page = 1;
        const day = new Date(s.clock.now()).toISOString().slice(0, 10);
        return csvDownload(`contacts-${day}.csv`, COLUMNS, EXPORT_CHUNK, async () =>
          (await s.contacts.list(ws, page++, EXPORT_CHUNK)).contacts.map((c) => [c.name, c.phone, c.email, c.type]),
        );
      }),
      { auth: "session", ...HIDDEN },
    )
    .get(
      "/dashboard/contacts/import",
      kit.withSession(async (_ctx, who) => importPage(who)),
      { auth: "session", ...HIDDEN },
    )
    .post(
      "/dashboard/contacts/import",
      kit.withSession(async ({ body }, who) => {
        const ws = who.session.workspaceId;
        const upload = uploadedCsv(body, "Choose a CSV file that has a header line and at least one contact.");
        if ("error" in upload) return importPage(who, 400, upload.error);
        const [header, ...rows] = upload.records;
        const at = Object.fromEntries(COLUMNS.map((c) => [c, header.cells.findIndex((h) => h.trim().toLowerCase() === c)])) as Record<
          (typeof COLUMNS)[number],
          number
        >;
        const missing = (["name", "phone"] as const).filter((c) => at[c] < 0);
        if (missing.length)
          return importPage(
            who,
            400,
            `The first line must name the columns; ${missing.join(" and ")} ${missing.length === 1 ? "is" : "are"} missing (it has: ${header.cells.join(", ")}).`,
          );
        if (!rows.length) return importPage(who, 400, "The file has a header line but no contacts under it.");
        if (rows.length > IMPORT_MAX_ROWS)
          return importPage(who, 413, `The file has ${rows.length} rows; import at most ${IMPORT_MAX_ROWS} at a time.`);
        let imported = 0;
        const rejected: Rejected[] = [];
        for (const { line, cells } of rows) {
          const cell = (c: (typeof COLUMNS)[number]) => (at[c] < 0 ? "" : (cells[at[c]] ?? "").trim());
          const form: ContactForm = { name: cell("name"), phone: cell("phone"), email: cell("email"), type: cell("type"), timezone: "" };
          const held = cells.map(csvCell).join(",");
          const long = tooLong(form);
          if (long) {
            rejected.push({ line, held, reason: long.message });
            continue;
          }
          try {
            await s.contacts.create(ws, {
              name: form.name,
              phone: form.phone,
              ...(form.email ? { email: form.email } : {}),
              ...(form.type ? { type: form.type } : {}),
            });
            imported++;
          } catch (error) {
            if (!(error instanceof AppError) || error.status >= 500) throw error;
            rejected.push({ line, held, reason: readable(error) });
          }
        }
        return importPage(who, 200, null, { imported, rejected });
      }),
      { auth: "session", ...HIDDEN },
    )
    .get(
      "/dashboard/contacts/:id/edit",
      kit.withSession(async ({ params }, who) => {
        const c = await s.contacts.present(await s.contacts.require(who.session.workspaceId, Number(params?.id)));
        return formPage(who, c.contact_id, {
          name: c.name,
          phone: c.phone,
          email: c.email ?? "",
          type: c.type ?? "",
          timezone: c.timezone ?? "",
        });
      }),
      { auth: "session", ...HIDDEN },
    )
    .post(
      "/dashboard/contacts/:id",
      kit.withSession(async ({ params, body }, who) => {
        const current = await s.contacts.require(who.session.workspaceId, Number(params?.id));
        const form = contactFormOf(body);
        const failed = await attempt(who, current.id, form, () =>
          s.contacts.update(who.session.workspaceId, {
            contact_id: current.id,
            name: form.name,
            phone: form.phone,
            email: form.email || null,
            type: form.type || null,
            timezone: form.timezone || null,
          }),
        );
        if (failed) return failed;
        await kit.flash(who, { kind: "notice", text: `Contact ${form.name} saved.` });
        return redirect("/dashboard/contacts");
      }),
      { auth: "session", ...HIDDEN },
    )
    .get(
      "/dashboard/contacts/:id/delete",
      kit.withSession(async ({ params }, who) => {
        const c = await s.contacts.present(await s.contacts.require(who.session.workspaceId, Number(params?.id)));
        return kit.shell(who, "Delete a contact", "/dashboard/contacts", contactDeleteBody({ c, csrf: who.viewer.csrf }));
      }),
      { auth: "session", ...HIDDEN },
    )
    .post(
      "/dashboard/contacts/:id/delete",
      kit.withSession(async ({ params }, who) => {
        const c = await s.contacts.require(who.session.workspaceId, Number(params?.id));
        await s.contacts.remove(who.session.workspaceId, c.id);
        await kit.flash(who, { kind: "notice", text: `Contact ${c.name} deleted.` });
        return redirect("/dashboard/contacts");
      }),
      { auth: "session", ...HIDDEN },
    );
}
