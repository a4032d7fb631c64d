// Opt-outs in the dashboard: the numbers suppressed now and the audit of every change, opting a
// number out by hand or back in, and a CSV import of numbers to opt out. Every change is one call
// of the safety service the API's /v1/api/optout routes use, with source "dashboard" or "import".
import { Elysia } from "elysia";
import { declaredAuth } from "../http/declared-auth";
import { AppError } from "../core/errors";
import { csvCell } from "../lib/csv";
import { requirePhone } from "../modules/contacts/service";
import type { Services } from "../services-type";
import { uploadedCsv } from "./contact-routes";
import type { Kit, Signed } from "./kit";
import type { Rejected } from "./pages/contacts";
import { optOutImportBody, optOutsBody, type ImportReport, type OptOutForm, type OptOutRow, type OptOutView } from "./pages/optouts";
import { formOf, HIDDEN, redirect } from "./web";

const PAGE_SIZE = 25;
const IMPORT_MAX_ROWS = 5000;
/** The API's limit on a reason. */
const REASON_MAX = 500;

/** The service's message as a sentence: capitalised, with a full stop. */
const sentence = (text: string) => `${text.charAt(0).toUpperCase()}${text.slice(1)}${/[.!?]$/.test(text) ? "" : "."}`;

/** What these routes use of the services. */
export type DashboardOptOutRoutesDeps = Pick<Services, "contacts" | "safety">;

export function dashboardOptOutRoutes(s: DashboardOptOutRoutesDeps, kit: Kit) {
  /** The list's page for a view, the contact's name joined to each entry. */
  async function optOutsPage(who: Signed, url: URL, status = 200, form?: OptOutForm, errors?: { phone?: string; reason?: string }) {
    const ws = who.session.workspaceId;
    const view: OptOutView = url.searchParams.get("view") === "audit" ? "audit" : "active";
    const typed = view === "audit" ? (url.searchParams.get("phone") ?? "").trim().slice(0, 32) : "";
    let phone: string | null = null;
    let phoneError: string | undefined;
    if (typed) {
      try {
        phone = requirePhone(typed);
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        phoneError = sentence(error.message);
      }
    }
    const requested = Number(url.searchParams.get("page") ?? "1");
    let page = Number.isSafeInteger(requested) && requested >= 1 ? requested : 1;
    const fetch = async (p: number) =>
      phoneError
        ? { entries: [], pagination: { total: 0 } }
        : await s.safety.list(ws, { phone, active: view === "active", page: p, limit: PAGE_SIZE });
    let result = await fetch(page);
    const pages = Math.max(1, Math.ceil(result.pagination.total / PAGE_SIZE));
    // A page past the end (the list shrank, or a hand-edited link) shows the last one.
    if (page > pages) {
      page = pages;
      result = await fetch(page);
    }
    const rows: OptOutRow[] = [];
    for (const e of result.entries) {
      rows.push({ ...e, contactName: e.contact_id === null ? null : (await s.contacts.require(ws, e.contact_id)).name });
    }
    const body = optOutsBody({
      view,
      rows,
      total: result.pagination.total,
      page,
      pages,
      phone: phone ?? typed,
      phoneError,
      csrf: who.viewer.csrf,
      form,
      errors,
    });
    return kit.shell(who, "Opt-outs", "/dashboard/optouts", body, phoneError ? 400 : status);
  }

  function importPage(who: Signed, status = 200, error: string | null = null, report: ImportReport | null = null) {
    return kit.shell(
      who,
      "Import opt-outs",
      "/dashboard/optouts",
      optOutImportBody({ csrf: who.viewer.csrf, maxRows: IMPORT_MAX_ROWS, error, report }),
      status,
    );
  }

  return new Elysia({ name: "pigeon-dashboard-optouts" })
    .use(declaredAuth())
    .get(
      "/dashboard/optouts",
      kit.withSession(async ({ request }, who) => optOutsPage(who, new URL(request.url))),
      { auth: "session", ...HIDDEN },
    )
    .post(
      "/dashboard/optouts",
      kit.withSession(async ({ request, body }, who) => {
        const f = formOf(body);
        const form = { phone: (f.phone ?? "").trim(), reason: (f.reason ?? "").trim() };
        const back = new URL("/dashboard/optouts", request.url);
        if (form.reason.length > REASON_MAX)
          return optOutsPage(who, back, 400, form, { reason: `Keep the reason to ${REASON_MAX} characters or fewer.` });
        let phone: string;
        try {
          phone = requirePhone(form.phone);
        } catch (error) {
          if (!(error instanceof AppError)) throw error;
          return optOutsPage(who, back, error.status, form, { phone: sentence(error.message) });
        }
        const changed = await s.safety.optOut(who.session.workspaceId, phone, { source: "dashboard", reason: form.reason || null });
        await kit.flash(who, {
          kind: "notice",
          text: changed
            ? `${phone} opted out: sends to it are refused until it opts back in.`
            : `${phone} was already opted out; nothing changed.`,
        });
        return redirect("/dashboard/optouts");
      }),
      { auth: "session", ...HIDDEN },
    )
    .post(
      "/dashboard/optouts/opt-in",
      kit.withSession(async ({ body }, who) => {
        // The number comes from a button of the list; one that is not a number is not found.
        let phone: string;
        try {
          phone = requirePhone(formOf(body).phone ?? "");
        } catch {
          throw new AppError("not_found", "That number is not on the opt-out list");
        }
        const changed = await s.safety.optIn(who.session.workspaceId, phone, { source: "dashboard" });
        await kit.flash(who, {
          kind: "notice",
          text: changed ? `${phone} opted back in: it can be texted again.` : `${phone} was not opted out; nothing changed.`,
        });
        return redirect("/dashboard/optouts");
      }),
      { auth: "session", ...HIDDEN },
    )
    .get(
      "/dashboard/optouts/import",
      kit.withSession(async (_ctx, who) => importPage(who)),
      { auth: "session", ...HIDDEN },
    )
    .post(
      "/dashboard/optouts/import",
      kit.withSession(async ({ body }, who) => {
        const ws = who.session.workspaceId;
        const upload = uploadedCsv(body, "Choose a CSV file with at least one phone number.");
        if ("error" in upload) return importPage(who, 400, upload.error);
        const records = upload.records;
        // A first line that names a phone column is a header; without one the number is the first cell.
        const names = records[0]?.cells.map((c) => c.trim().toLowerCase()) ?? [];
        const header = names.includes("phone");
        const at = header ? { phone: names.indexOf("phone"), reason: names.indexOf("reason") } : { phone: 0, reason: 1 };
        const rows = header ? records.slice(1) : records;
        if (!rows.length) return importPage(who, 400, "The file has a header line but no numbers under it.");
        if (rows.length > IMPORT_MAX_ROWS)
          return importPage(who, 413, `The file has ${rows.length} rows; import at most ${IMPORT_MAX_ROWS} at a time.`);
        const report: ImportReport = { added: 0, already: 0, rejected: [] };
        for (const { line, cells } of rows) {
          const held = cells.map(csvCell).join(",");
          const raw = (cells[at.phone] ?? "").trim();
          const reason = at.reason < 0 ? "" : (cells[at.reason] ?? "").trim();
          const reject = (why: string) => report.rejected.push({ line, held, reason: why } satisfies Rejected);
          if (!raw) {
            reject("No phone number.");
            continue;
          }
          if (reason.length > REASON_MAX) {
            reject(`The reason is longer than ${REASON_MAX} characters.`);
            continue;
          }
          let phone: string;
          try {
            phone = requirePhone(raw);
          } catch (error) {
            if (!(error instanceof AppError)) throw error;
            reject(sentence(error.message));
            continue;
          }
          if (await s.safety.optOut(ws, phone, { source: "import", reason: reason || null })) report.added++;
          else report.already++;
        }
        return importPage(who, 200, null, report);
      }),
      { auth: "session", ...HIDDEN },
    );
}
