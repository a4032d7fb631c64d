// Devices in the dashboard: the list, one device (rename, pacing, activate or deactivate, stats),
// pairing a phone with a live "waiting… paired", and connecting a chat-app number.
import { Elysia } from "elysia";
import { declaredAuth } from "../http/declared-auth";
import { AppError } from "../core/errors";
import { requestOrigin } from "../lib/trusted-proxies";
import { SEND_LIMIT_MAX } from "../modules/devices/model";
import type { Services } from "../services-type";
import type { Ctx, Kit, Signed } from "./kit";
import { chatappBody, deviceBody, devicesBody, pairBody, pairStatus } from "./pages/devices";
import { formOf, fragment, HIDDEN, redirect } from "./web";

/** A whole number in [min, max] from a form field, or the reason it is not. */
function intField(raw: string | undefined, label: string, min: number, max: number): number | string {
  const value = Number(raw);
  if (raw === undefined || raw.trim() === "" || !Number.isInteger(value) || value < min || value > max)
    return `${label} must be a whole number from ${min} to ${max}.`;
  return value;
}

/** What these routes use of the services. */
export type DashboardDeviceRoutesDeps = Pick<Services, "accounts" | "channels" | "chatapp" | "config" | "devices" | "phone">;

export function dashboardDeviceRoutes(s: DashboardDeviceRoutesDeps, kit: Kit) {
  const phoneKinds = new Set(s.channels.filter((c) => c.needsPresence).map((c) => c.kind as string));

  async function own(who: Signed, raw: string | undefined) {
    const row = await s.devices.find(who.session.workspaceId, Number(raw));
    if (!row) throw new AppError("not_found", `Device ${raw} not found`);
    return row;
  }

  async function devicePage(
    who: Signed,
    id: number,
    status = 200,
    form?: { name: string; limit: string; min: string; max: string },
    error?: string,
  ) {
    const ws = who.session.workspaceId;
    const d = s.devices.present(await s.devices.require(ws, id));
    const body = deviceBody({
      d,
      h: await s.devices.health(ws, id),
      stats: await s.devices.stats(ws, id),
      csrf: who.viewer.csrf,
      form,
      error,
    });
    return kit.shell(who, d.name, "/dashboard/devices", body, status);
  }

  /** The newest phone of the workspace registered after `known` (the largest device id when the page was drawn). */
  async function pairedSince(ws: number, known: number) {
    const found = (await s.devices.records(ws, true)).filter((d) => d.id > known && phoneKinds.has(d.kind)).at(-1);
    return found ? { device_id: found.id, name: found.name } : null;
  }

  return new Elysia({ name: "pigeon-dashboard-devices" })
    .use(declaredAuth())
    .get(
      "/dashboard/devices",
      kit.withSession(async (_ctx, who) => {
        const ws = who.session.workspaceId;
        const devices = [];
        for (const row of await s.devices.records(ws, true))
          devices.push({ d: s.devices.present(row), h: await s.devices.health(ws, row.id) });
        return kit.shell(who, "Devices", "/dashboard/devices", devicesBody({ devices }));
      }),
      { auth: "session", ...HIDDEN },
    )
    .get(
      "/dashboard/devices/pair",
      kit.withSession(async ({ request, server }: Ctx, who) => {
        const ws = who.session.workspaceId;
        const base = s.config.publicUrl ?? requestOrigin(request, server?.requestIP(request)?.address, s.config.trustedProxies);
        const info = await s.phone.pairingInfo(`${base.replace(/\/+$/, "")}/mobile/v1`, (await s.accounts.getWorkspace(ws)).pairingToken);
        const known = Math.max(0, ...(await s.devices.records(ws, true)).map((d) => d.id));
        return kit.shell(
          who,
          "Pair a phone",
          "/dashboard/devices",
          pairBody({ serverUrl: info.server_url, token: info.pairing_token, qrSvg: info.qr_svg, known }),
        );
      }),
      { auth: "session", ...HIDDEN },
    )
    .get(
      "/dashboard/devices/pair/status",
      kit.withSession(async ({ request }, who) => {
        const known = Number(new URL(request.url).searchParams.get("known") ?? "0");
        const paired = Number.isSafeInteger(known) ? await pairedSince(who.session.workspaceId, known) : null;
        // 286 tells htmx to stop polling: the phone is here.
        return fragment(pairStatus(paired, known), paired ? 286 : 200);
      }),
      { auth: "session", ...HIDDEN },
    )
    .get(
      "/dashboard/devices/chatapp",
      kit.withSession(async (_ctx, who) =>
        kit.shell(who, "Connect a chat-app number", "/dashboard/devices", chatappBody({ csrf: who.viewer.csrf })),
      ),
      {
        auth: "session",
        ...HIDDEN,
      },
    )
    .post(
      "/dashboard/devices/chatapp",
      kit.withSession(async ({ body }, who) => {
        const form = formOf(body);
        const token = (form.access_token ?? "").trim();
        const again = (error: string, status = 400) =>
          kit.shell(who, "Connect a chat-app number", "/dashboard/devices", chatappBody({ csrf: who.viewer.csrf, error }), status);
        if (!token) return again("Paste the access token.");
        try {
          const result = await s.chatapp.connect(who.session.workspaceId, {
            access_token: token,
            ...(form.business_account_id?.trim() ? { business_account_id: form.business_account_id.trim() } : {}),
          });
          const summary = {
            accounts: result.business_accounts.length,
            devices: result.devices.map((d) => d.name),
            templates: result.templates,
          };
          return kit.shell(who, "Connect a chat-app number", "/dashboard/devices", chatappBody({ csrf: who.viewer.csrf, result: summary }));
        } catch (error) {
          if (error instanceof AppError) return again(error.message, error.status);
          throw error;
        }
      }),
      { auth: "session", ...HIDDEN },
    )
    .get(
      "/dashboard/devices/:id",
      kit.withSession(async ({ params }, who) => devicePage(who, (await own(who, params?.id)).id)),
      { auth: "session", ...HIDDEN },
    )
    .post(
      "/dashboard/devices/:id",
      kit.withSession(async ({ params, body }, who) => {
        const row = await own(who, params?.id);
        const f = formOf(body);
        const form = {
          name: (f.name ?? "").trim(),
          limit: f.send_limit_per_minute ?? "",
          min: f.send_interval_min ?? String(row.sendIntervalMin),
          max: f.send_interval_max ?? String(row.sendIntervalMax),
        };
        const limit = intField(form.limit, "Messages per minute", 1, SEND_LIMIT_MAX);
        const min = intField(form.min, "The shortest pause", 0, 3600);
        const max = intField(form.max, "The longest pause", 0, 3600);
        const problem =
          !form.name || form.name.length > 128
            ? "The name needs 1 to 128 characters."
            : [limit, min, max].find((v) => typeof v === "string");
        if (typeof problem === "string") return devicePage(who, row.id, 400, form, problem);
        try {
          await s.devices.update(who.session.workspaceId, {
            device_id: row.id,
            name: form.name,
            send_limit_per_minute: limit as number,
            ...(phoneKinds.has(row.kind) ? { send_interval_min: min as number, send_interval_max: max as number } : {}),
          });
        } catch (error) {
          if (error instanceof AppError && error.status === 400) return devicePage(who, row.id, 400, form, error.message);
          throw error;
        }
        await kit.flash(who, { kind: "notice", text: "Saved." });
        return redirect(`/dashboard/devices/${row.id}`);
      }),
      { auth: "session", ...HIDDEN },
    )
    .post(
      "/dashboard/devices/:id/status",
      kit.withSession(async ({ params, body }, who) => {
        const row = await own(who, params?.id);
        const status = formOf(body).status === "active" ? "active" : "inactive";
        await s.devices.setStatus(who.session.workspaceId, [row.id], status);
        await kit.flash(who, {
          kind: "notice",
          text: status === "active" ? "Activated: it takes messages again." : "Deactivated: it takes no new messages.",
        });
        return redirect(`/dashboard/devices/${row.id}`);
      }),
      { auth: "session", ...HIDDEN },
    );
}
