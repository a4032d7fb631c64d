// Sender pools in the dashboard: the list with each member's caps and usage, a new pool from the
// workspace's phones (or one SIM of a phone) and cloud numbers, Resume and Pause of one member, and
// deleting a pool after a confirmation page. Everything goes through the pool service the API uses;
// resuming is the API's update with the member list as it is and `resume: true` on that member.
import { Elysia } from "elysia";
import { declaredAuth } from "../http/declared-auth";
import { AppError } from "../core/errors";
import { reportedSimNumbers } from "../modules/devices/service";
import type { Services } from "../services-type";
import type { Kit, Signed } from "./kit";
import {
  emptyPoolForm,
  memberLabel,
  poolDeleteBody,
  poolFormBody,
  poolsBody,
  STRATEGY_TEXT,
  type Candidate,
  type MemberForm,
  type PoolForm,
} from "./pages/pools";
import { formOf, HIDDEN, redirect } from "./web";

/** What these routes use of the services. */
export type DashboardPoolRoutesDeps = Pick<Services, "channels" | "clock" | "devices" | "pools">;

/** The form field beside which a service error about a member's field is shown. */
const MEMBER_FIELD: Record<string, keyof MemberForm | "member"> = {
  number: "number",
  daily_limit: "daily",
  monthly_limit: "monthly",
  monthly_unique_recipients: "recipients",
};

const CAP = /^\d{1,9}$/;

export function dashboardPoolRoutes(s: DashboardPoolRoutesDeps, kit: Kit) {
  /** The workspace's active SMS devices as members: a phone, each SIM of a phone that reported two or more, a cloud number. */
  async function candidates(ws: number): Promise<Candidate[]> {
    const rows = (await s.devices.records(ws, false)).filter((d) => s.channels.find((c) => c.kind === d.kind)?.deliveryType === "sms");
    const named = new Map<string, number>();
    for (const d of rows) named.set(d.name, (named.get(d.name) ?? 0) + 1);
    const out: Candidate[] = [];
    for (const d of rows) {
      const phone = s.channels.find((c) => c.kind === d.kind)?.needsPresence === true;
      // Two devices of one name are told apart by their ids.
      const name = (named.get(d.name) ?? 0) > 1 ? `${d.name} (device ${d.id})` : d.name;
      const sims = phone ? reportedSimNumbers(d) : [];
      // A phone with two SIMs: itself (the SIM it picks) and each SIM.
      const label = sims.length > 1 ? `${name}, any SIM` : name;
      out.push({ key: String(d.id), deviceId: d.id, sim: null, label, phone, number: phone ? null : d.phoneNumber });
      if (sims.length > 1)
        for (const n of sims) out.push({ key: `${d.id}-sim${n}`, deviceId: d.id, sim: n, label: `${name}, SIM ${n}`, phone, number: null });
    }
    return out;
  }

  async function listPage(who: Signed) {
    const ws = who.session.workspaceId;
    const pools = [];
    for (const pool of (await s.pools.list(ws)).pools) pools.push({ pool, usage: await s.pools.usage(ws, pool.pool_id) });
    return kit.shell(who, "Pools", "/dashboard/pools", poolsBody({ pools, now: s.clock.now(), csrf: who.viewer.csrf }));
  }

  async function formPage(who: Signed, form: PoolForm, status = 200, errors: Record<string, string> = {}, error: string | null = null) {
    const body = poolFormBody({ candidates: await candidates(who.session.workspaceId), form, csrf: who.viewer.csrf, errors, error });
    return kit.shell(who, "New pool", "/dashboard/pools", body, status);
  }

  function poolFormOf(body: unknown, list: Candidate[]): PoolForm {
    const f = formOf(body);
    const members: Record<string, MemberForm> = {};
    for (const c of list)
      members[c.key] = {
        chosen: f[`member:${c.key}`] === "1",
        number: (f[`number:${c.key}`] ?? "").trim(),
        daily: (f[`daily:${c.key}`] ?? "").trim(),
        monthly: (f[`monthly:${c.key}`] ?? "").trim(),
        recipients: (f[`recipients:${c.key}`] ?? "").trim(),
        segments: f[`segments:${c.key}`] === "1",
      };
    return {
      name: (f.name ?? "").trim(),
      strategy: f.strategy && f.strategy in STRATEGY_TEXT ? f.strategy : "sticky",
      geomatch: f.geomatch === "1",
      isDefault: f.is_default === "1",
      members,
    };
  }

  /** The checks the API's request schema makes, as messages per field. */
  function schemaErrors(form: PoolForm, chosen: Candidate[]): Record<string, string> {
    const errors: Record<string, string> = {};
    if (!form.name || form.name.length > 100) errors.name = "Give the pool a name of 1 to 100 characters.";
    if (chosen.length === 0) errors.members = "Choose at least one member.";
    if (chosen.length > 50) errors.members = "A pool has at most 50 members.";
    for (const c of chosen) {
      const m = form.members[c.key];
      for (const field of ["daily", "monthly", "recipients"] as const)
        if (m[field] && (!CAP.test(m[field]) || Number(m[field]) < 1))
          errors[`${c.key}.${field}`] = "A whole number of at least 1, or empty for no limit.";
      if (m.number.length > 32) errors[`${c.key}.number`] = "A number has at most 32 characters.";
    }
    return errors;
  }

  /** The pool of this workspace with the id in the path, and one member of it; others are not found. */
  async function own(who: Signed, rawPool: string | undefined) {
    const id = Number(rawPool);
    if (!Number.isSafeInteger(id) || id < 1) throw new AppError("not_found", `pool ${rawPool} not found`);
    return s.pools.get(who.session.workspaceId, id);
  }

  /**
   * Pauses or resumes one member: the API's update with every member as it is. A member's number
   * is sent only when it is its own (not the one its device knows), so nothing else changes.
   */
  async function setMember(who: Signed, rawPool: string | undefined, rawMember: string | undefined, resume: boolean) {
    const ws = who.session.workspaceId;
    const p = await own(who, rawPool);
    const target = p.members.find((m) => m.member_id === Number(rawMember));
    if (!target) throw new AppError("not_found", `member ${rawMember} of pool ${p.pool_id} not found`);
    const deviceNumbers = new Map((await s.devices.records(ws, true)).map((d) => [d.id, d.phoneNumber]));
    const members = p.members.map((m) => ({
      device_id: m.device_id,
      sim_number: m.sim_number,
      number: m.number === (deviceNumbers.get(m.device_id) ?? null) ? null : m.number,
      paused: m === target ? !resume : m.paused,
      ...(m === target && resume ? { resume: true } : {}),
      daily_limit: m.daily_limit,
      monthly_limit: m.monthly_limit,
      count: m.count,
      monthly_unique_recipients: m.monthly_unique_recipients,
    }));
    const name = memberLabel(target);
    try {
      await s.pools.update(ws, p.pool_id, { members }, { type: "dashboard_user", user_id: who.session.userId, email: who.session.email });
      await kit.flash(who, {
        kind: "notice",
        text: resume
          ? `${name} in ${p.name} resumed: it takes messages again.`
          : `${name} in ${p.name} paused: it is skipped until you resume it.`,
      });
    } catch (error) {
      if (!(error instanceof AppError) || error.status >= 500) throw error;
      await kit.flash(who, { kind: "error", text: `${p.name} was not changed: ${error.message}` });
    }
    return redirect("/dashboard/pools");
  }

  return new Elysia({ name: "pigeon-dashboard-pools" })
    .use(declaredAuth())
    .get(
      "/dashboard/pools",
      kit.withSession(async (_ctx, who) => listPage(who)),
      { auth: "session", ...HIDDEN },
    )
    .get(
      "/dashboard/pools/new",
      kit.withSession(async (_ctx, who) => formPage(who, emptyPoolForm())),
      { auth: "session", ...HIDDEN },
    )
    .post(
      "/dashboard/pools",
      kit.withSession(async ({ body }, who) => {
        const list = await candidates(who.session.workspaceId);
        const form = poolFormOf(body, list);
        const chosen = list.filter((c) => form.members[c.key].chosen);
        const errors = schemaErrors(form, chosen);
        if (Object.keys(errors).length) return formPage(who, form, 400, errors);
        const cap = (v: string) => (v ? Number(v) : null);
        try {
          const made = await s.pools.create(who.session.workspaceId, {
            name: form.name,
            strategy: form.strategy,
            geomatch: form.geomatch,
            is_default: form.isDefault,
            members: chosen.map((c) => {
              const m = form.members[c.key];
              return {
                device_id: c.deviceId,
                ...(c.sim === null ? {} : { sim_number: c.sim }),
                ...(c.phone && m.number ? { number: m.number } : {}),
                daily_limit: cap(m.daily),
                monthly_limit: cap(m.monthly),
                monthly_unique_recipients: cap(m.recipients),
                count: m.segments ? "segments" : "messages",
              };
            }),
          });
          await kit.flash(who, {
            kind: "notice",
            text: `Pool "${made.name}" created with ${made.members.length} member${made.members.length === 1 ? "" : "s"}.`,
          });
          return redirect("/dashboard/pools");
        } catch (error) {
          if (!(error instanceof AppError) || error.status >= 500) throw error;
          const field = typeof error.data.field === "string" ? error.data.field : "";
          const member = /^members\[(\d+)\](?:\.(\w+))?$/.exec(field);
          if (member && chosen[Number(member[1])])
            return formPage(who, form, error.status, {
              [`${chosen[Number(member[1])].key}.${MEMBER_FIELD[member[2] ?? ""] ?? "member"}`]: error.message,
            });
          if (field === "name" || field === "strategy" || field === "members")
            return formPage(who, form, error.status, { [field]: error.message });
          return formPage(who, form, error.status, {}, error.message);
        }
      }),
      { auth: "session", ...HIDDEN },
    )
    .post(
      "/dashboard/pools/:id/members/:member/resume",
      kit.withSession(async ({ params }, who) => setMember(who, params?.id, params?.member, true)),
      { auth: "session", ...HIDDEN },
    )
    .post(
      "/dashboard/pools/:id/members/:member/pause",
      kit.withSession(async ({ params }, who) => setMember(who, params?.id, params?.member, false)),
      { auth: "session", ...HIDDEN },
    )
    .get(
      "/dashboard/pools/:id/delete",
      kit.withSession(async ({ params }, who) => {
        const p = await own(who, params?.id);
        return kit.shell(who, "Delete a pool", "/dashboard/pools", poolDeleteBody({ p, csrf: who.viewer.csrf }));
      }),
      { auth: "session", ...HIDDEN },
    )
    .post(
      "/dashboard/pools/:id/delete",
      kit.withSession(async ({ params }, who) => {
        const p = await own(who, params?.id);
        await s.pools.remove(who.session.workspaceId, p.pool_id);
        await kit.flash(who, { kind: "notice", text: `Pool "${p.name}" deleted.` });
        return redirect("/dashboard/pools");
      }),
      { auth: "session", ...HIDDEN },
    );
}
