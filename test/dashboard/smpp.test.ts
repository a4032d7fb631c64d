// The SMPP credentials on the dashboard's API keys page, in process: an owner creates them (the
// password shown on the next page only, and an ESME built on the npm `smpp` package binds with it),
// issues a new password (the old one is refused and its bind closed); a member sees none of it and
// cannot post to it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { NetworkListener } from "../../src/modules/descriptor";
import { listen } from "../../src/modules/smpp";
import { STATUS } from "../../src/modules/smpp/pdu";
import { DASHBOARD_PASSWORD, dashboardRequests } from "../helpers/dashboard-requests";
import { createTestContext, type TestContext } from "../helpers/context";
import { bindEsme } from "../helpers/smpp-client";

const EMAIL = "owner@example.com";
const MEMBER_EMAIL = "member@example.com";

describe("the API keys page: SMPP credentials", () => {
  let ctx: TestContext;
  let listener: NetworkListener;
  let port = 0;
  let cookie = "";
  let csrf = "";
  const { post, text, signIn } = dashboardRequests(
    () => ctx,
    () => cookie,
    "/dashboard/keys",
  );
  async function shownOnce() {
    const page = await text("/dashboard/keys");
    return {
      password: /<code class="secret" id="new-secret">([^<]+)<\/code>/.exec(page)?.[1] ?? null,
      systemId: /system_id: <code>([^<]+)<\/code>/.exec(page)?.[1] ?? null,
    };
  }

  beforeAll(async () => {
    ctx = await createTestContext({ config: { host: "127.0.0.1", smpp: { port: 0, tlsPort: null } } });
    listener = (await listen(ctx.services, ctx.app, { failedBindDelayMs: 10 }))!;
    port = Number(/:(\d+)/.exec(listener.describe())?.[1]);
    await ctx.services.users.createUser({ email: EMAIL, password: DASHBOARD_PASSWORD });
    await ctx.services.users.createUser({ email: MEMBER_EMAIL, password: DASHBOARD_PASSWORD, role: "member" });
    ({ cookie, csrf } = await signIn(EMAIL));
  });
  afterAll(() => listener.stop(0));

  test("create, then a new password: shown once each time, only the newest binds, the old bind is closed", async () => {
    const empty = await text("/dashboard/keys");
    expect(empty).toContain("No SMPP credentials yet.");
    expect(empty).toContain(`The listener is on port ${port}.`);
    expect((await post("/dashboard/smpp/credentials", { _csrf: csrf })).status).toBe(303);
    const first = await shownOnce();
    expect(first.systemId).toBe(`pigeon${ctx.workspace.id}`);
    expect(first.password).toMatch(/^[A-Za-z0-9]{8}$/);
    const later = await text("/dashboard/keys");
    expect(later).not.toContain(first.password!);
    expect(later).toContain(`<code id="smpp-system-id">${first.systemId}</code>`);
    const bound = await bindEsme(port, { systemId: first.systemId!, password: first.password! });
    expect(bound.resp.command_status).toBe(0);

    expect((await post("/dashboard/smpp/credentials", { _csrf: csrf })).status).toBe(303);
    const second = await shownOnce();
    expect(second.systemId).toBe(first.systemId);
    expect(second.password).not.toBe(first.password);
    await bound.esme.closed;
    const old = await bindEsme(port, { systemId: first.systemId!, password: first.password! });
    expect(old.resp.command_status).toBe(STATUS.ESME_RINVPASWD);
    old.esme.close();
    const fresh = await bindEsme(port, { systemId: second.systemId!, password: second.password! });
    expect(fresh.resp.command_status).toBe(0);
    fresh.esme.close();
  });

  test("a member sees no SMPP section and cannot issue a password; without the CSRF token nothing changes", async () => {
    const member = await signIn(MEMBER_EMAIL);
    expect(await text("/dashboard/keys", member.cookie)).not.toContain('id="smpp-title"');
    const before = await ctx.services.smpp.credentials.get(ctx.workspace.id);
    expect((await post("/dashboard/smpp/credentials", { _csrf: member.csrf }, member.cookie)).status).toBe(403);
    expect((await post("/dashboard/smpp/credentials", {})).status).toBe(403);
    expect(await ctx.services.smpp.credentials.get(ctx.workspace.id)).toEqual(before);
  });
});
