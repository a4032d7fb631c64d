// The dashboard's Pools page in process, with a manual clock: the new-pool form offers each phone,
// each SIM of a phone that reported two and the cloud number, refuses what the API refuses beside
// the field, and creates the pool; the list shows members, caps and usage as meters; a member paused
// after carrier failures (or by the user) is resumed with its button and nothing else of the pool
// changes; deleting asks first; another workspace's pool is not found; a member user sees the page;
// and every page's navigation is Overview and four groups with the current page marked.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { DASHBOARD_PASSWORD, dashboardRequests } from "../helpers/dashboard-requests";
import { createTestContext, type TestContext } from "../helpers/context";
import { startFakeCloud, type FakeCloud } from "../helpers/fake-cloud";
import { RECIPIENT, CLOUD_NUMBER } from "../helpers/numbers";

const EMAIL = "owner@example.com";
const MEMBER_EMAIL = "member@example.com";

describe("the Pools page", () => {
  let ctx: TestContext;
  let fake: FakeCloud;
  let cookie = "";
  let csrf = "";
  let shop = 0;
  let office = 0;
  let cloud = 0;

  const { get, post, text, signIn } = dashboardRequests(
    () => ctx,
    () => cookie,
    "/dashboard/pools",
  );

  const pools = async () => (await ctx.services.pools.list(ctx.workspace.id)).pools;

  beforeAll(async () => {
    ctx = await createTestContext();
    fake = await startFakeCloud({ deliver: (req) => ctx.app.handle(req) });
    await ctx.services.users.createUser({ email: EMAIL, password: DASHBOARD_PASSWORD });
    await ctx.services.users.createUser({ email: MEMBER_EMAIL, password: DASHBOARD_PASSWORD, role: "member" });
    const phone = await ctx.phone("Shop phone");
    shop = phone.device_id;
    // The phone reports two SIMs as the app does.
    const patched = await ctx.app.handle(
      new Request("http://localhost/mobile/v1/device", {
        method: "PATCH",
        headers: {
          authorization: `Bearer ${phone.device_token}`,
          "content-type": "application/json",
          "user-agent": "me.capcom.smsgateway/1.68.0",
        },
        body: JSON.stringify({
          id: phone.external_id,
          simCards: [
            { slotIndex: 0, simNumber: 1, phoneNumber: "*******0100", carrierName: "***ile", iccid: "****************5678" },
            { slotIndex: 1, simNumber: 2, phoneNumber: "*******0200", carrierName: "***net", iccid: "****************9012" },
          ],
        }),
      }),
    );
    expect(patched.status).toBeLessThan(300);
    office = (await ctx.phone("Back office")).device_id;
    cloud = (await ctx.cloudDevice(fake)).device_id;
    ({ cookie, csrf } = await signIn(EMAIL));
  });

  afterAll(() => fake?.stop());

  test("with no pool the page says how to make one; the form offers each phone, each SIM of the two-SIM phone and the cloud number", async () => {
    expect(await text("/dashboard/pools")).toContain("No pool yet.");
    const form = await text("/dashboard/pools/new");
    for (const legend of ["Shop phone, any SIM", "Shop phone, SIM 1", "Shop phone, SIM 2", "Back office", "Cloud number"])
      expect(form).toContain(`<legend>${legend}</legend>`);
    // A phone takes a number for geomatch; a cloud number knows its own.
    expect(form).toContain(`name="number:${shop}-sim1"`);
    expect(form).toContain(`name="number:${office}"`);
    expect(form).not.toContain(`name="number:${cloud}"`);
    expect(form).toContain("Sends from +15005550006.");
  });

  test("a form without members, with a bad number or a taken name is shown again with the reason beside the field", async () => {
    const none = await post("/dashboard/pools", { _csrf: csrf, name: "Shop", strategy: "round_robin" });
    expect(none.status).toBe(400);
    const noneHtml = await none.text();
    expect(noneHtml).toContain('id="p-members-error" role="alert">Choose at least one member.');
    expect(noneHtml).toContain('value="Shop"');

    const badNumber = await post("/dashboard/pools", {
      _csrf: csrf,
      name: "Shop",
      [`member:${shop}-sim1`]: "1",
      [`number:${shop}-sim1`]: "not a number",
      [`daily:${shop}-sim1`]: "10",
    });
    expect(badNumber.status).toBe(400);
    const badHtml = await badNumber.text();
    expect(badHtml).toMatch(new RegExp(`id="m-${shop}-sim1-number-error" role="alert">Invalid phone number`));
    expect(badHtml).toContain(`aria-describedby="m-${shop}-sim1-number-hint m-${shop}-sim1-number-error" aria-invalid="true"`);
    // What was typed stays.
    expect(badHtml).toContain('value="not a number"');

    const badCap = await post("/dashboard/pools", { _csrf: csrf, name: "Shop", [`member:${cloud}`]: "1", [`daily:${cloud}`]: "0" });
    expect(badCap.status).toBe(400);
    expect(await badCap.text()).toContain(`id="m-${cloud}-daily-error" role="alert">A whole number of at least 1`);
    expect(await pools()).toEqual([]);
  });

  test("a pool is created from the form with its members, numbers and caps, and listed with them", async () => {
    const made = await post("/dashboard/pools", {
      _csrf: csrf,
      name: "Shop",
      strategy: "round_robin",
      geomatch: "1",
      is_default: "1",
      [`member:${shop}-sim1`]: "1",
      [`number:${shop}-sim1`]: "+1 (415) 555-0100",
      [`daily:${shop}-sim1`]: "10",
      [`member:${shop}-sim2`]: "1",
      [`monthly:${shop}-sim2`]: "100",
      [`segments:${shop}-sim2`]: "1",
      [`member:${cloud}`]: "1",
      [`recipients:${cloud}`]: "5",
      // Typed but not chosen: not a member.
      [`daily:${office}`]: "3",
    });
    expect(made.status).toBe(303);
    expect(made.headers.get("location")).toBe("/dashboard/pools");
    const [pool] = await pools();
    expect(pool).toMatchObject({ name: "Shop", strategy: "round_robin", geomatch: true, is_default: true });
    expect(
      pool.members.map((m) => [m.device_id, m.sim_number, m.number, m.daily_limit, m.monthly_limit, m.count, m.monthly_unique_recipients]),
    ).toEqual([
      [shop, 1, "+14155550100", 10, null, "messages", null],
      [shop, 2, null, null, 100, "segments", null],
      [cloud, null, CLOUD_NUMBER, null, null, "messages", 5],
    ]);

    const list = await text("/dashboard/pools");
    expect(list).toContain('role="status">Pool &quot;Shop&quot; created with 3 members.');
    expect(list).toContain('<h2 id="pool-');
    expect(list).toContain('<span class="badge">round robin</span>');
    expect(list).toContain("default pool");
    expect(list).toContain('<span class="badge">geomatch</span>');
    expect(list).toContain("Shop phone, SIM 1");
    expect(list).toContain("+14155550100");
    expect(list).toContain("0 of 10 messages");
    expect(list).toContain("0 of 100 segments (0 messages)");
    expect(list).toContain("0 of 5 recipients");
    expect(list).toContain('aria-label="Shop phone, SIM 1, today: 0 of 10 messages"');

    const taken = await post("/dashboard/pools", { _csrf: csrf, name: "Shop", [`member:${office}`]: "1" });
    expect(taken.status).toBe(409);
    expect(await taken.text()).toContain('id="p-name-error" role="alert">A pool named &quot;Shop&quot; already exists');
  });

  test("a send through the pool shows in its member's meters", async () => {
    const sent = await ctx.post("/v1/api/sms/send", {
      recipient_contact: RECIPIENT,
      message: "Hello",
      pool_id: (await pools())[0].pool_id,
    });
    expect(sent.status).toBe(200);
    const list = await text("/dashboard/pools");
    expect(list).toContain('value="1" aria-label="Shop phone, SIM 1, today: 1 of 10 messages"');
    expect(list).toContain("1 of 10 messages");
  });

  test("a member paused after carrier failures says until when, and Resume lifts the pause and changes nothing else", async () => {
    const [pool] = await pools();
    const sim2 = pool.members[1];
    const until = ctx.clock.now() + 900_000;
    await ctx.sql.run("UPDATE pool_member SET paused_until = ?, consecutive_failures = 0, backoff_seconds = 900 WHERE id = ?", [
      until,
      sim2.member_id,
    ]);
    const list = await text("/dashboard/pools");
    expect(list).toContain(
      `Paused after 3 carrier failures in a row, until ${new Date(until).toISOString().replace("T", " ").slice(0, 16)} UTC.`,
    );
    expect(list).toContain(`action="/dashboard/pools/${pool.pool_id}/members/${sim2.member_id}/resume"`);
    expect(list).toContain('aria-label="Resume Shop phone, SIM 2 in Shop"');

    const res = await post(`/dashboard/pools/${pool.pool_id}/members/${sim2.member_id}/resume`, { _csrf: csrf });
    expect(res.status).toBe(303);
    const [after] = await pools();
    expect(after.members[1]).toMatchObject({ member_id: sim2.member_id, paused: false, paused_until: null, consecutive_failures: 0 });
    // The other members, their ids (and so their recipients) and caps are as they were.
    expect(after.members.map(({ paused_until: _, consecutive_failures: __, ...m }) => m)).toEqual(
      pool.members.map(({ paused_until: _, consecutive_failures: __, ...m }) => m),
    );
    // The cloud number's own number is still its device's, not copied onto the member.
    const stored = await ctx.sql.get<{ number: string | null }>("SELECT number FROM pool_member WHERE id = ?", [pool.members[2].member_id]);
    expect(stored?.number).toBeNull();
    expect(await text("/dashboard/pools")).toContain("Shop phone, SIM 2 in Shop resumed: it takes messages again.");
  });

  test("Pause sets a member aside until Resume", async () => {
    const [pool] = await pools();
    const sim1 = pool.members[0];
    expect((await post(`/dashboard/pools/${pool.pool_id}/members/${sim1.member_id}/pause`, { _csrf: csrf })).status).toBe(303);
    expect((await pools())[0].members[0].paused).toBe(true);
    const list = await text("/dashboard/pools");
    expect(list).toContain("Paused by you.");
    expect(list).toContain('aria-label="Resume Shop phone, SIM 1 in Shop"');
    ctx.clock.advance(1000);
    expect((await post(`/dashboard/pools/${pool.pool_id}/members/${sim1.member_id}/resume`, { _csrf: csrf })).status).toBe(303);
    expect((await pools())[0].members[0]).toMatchObject({ paused: false, number: "+14155550100", daily_limit: 10 });
    // Each is announced once, naming the signed-in user who did it.
    const user = await ctx.sql.get<{ id: number }>("SELECT id FROM dashboard_user WHERE email = ?", [EMAIL]);
    const events = (
      await ctx.sql.all<{ type: string; data: string }>(
        "SELECT type, data FROM event WHERE type LIKE 'pool.%' AND data LIKE ? ORDER BY created_at",
        [`%"member_id":${sim1.member_id},%`],
      )
    ).map((e) => ({ type: e.type, by: JSON.parse(e.data).by }));
    const by = { type: "dashboard_user", user_id: user!.id, email: EMAIL };
    expect(events).toEqual([
      { type: "pool.member_paused", by },
      { type: "pool.member_resumed", by },
    ]);
  });

  test("a member user sees the pools", async () => {
    const member = await signIn(MEMBER_EMAIL);
    const list = await text("/dashboard/pools", member.cookie);
    expect(list).toContain("(member)");
    expect(list).toContain("Shop phone, SIM 1");
  });

  test("without the CSRF token nothing changes; another workspace's pool is not found; delete asks first", async () => {
    const [pool] = await pools();
    expect((await post(`/dashboard/pools/${pool.pool_id}/delete`, {})).status).toBe(403);
    expect((await post(`/dashboard/pools/${pool.pool_id}/members/${pool.members[0].member_id}/pause`, {})).status).toBe(403);
    expect(await pools()).toHaveLength(1);

    const other = await ctx.otherWorkspace("Elsewhere");
    const theirs = await ctx.services.pools.create(other.workspace.id, {
      name: "Theirs",
      members: [{ device_id: (await ctx.phone("Their phone", other.key)).device_id }],
    });
    expect((await get(`/dashboard/pools/${theirs.pool_id}/delete`)).status).toBe(404);
    expect((await post(`/dashboard/pools/${theirs.pool_id}/delete`, { _csrf: csrf })).status).toBe(404);
    expect((await post(`/dashboard/pools/${theirs.pool_id}/members/${theirs.members[0].member_id}/pause`, { _csrf: csrf })).status).toBe(
      404,
    );
    // A member of another pool is not this pool's.
    expect((await post(`/dashboard/pools/${pool.pool_id}/members/${theirs.members[0].member_id}/pause`, { _csrf: csrf })).status).toBe(404);
    expect((await ctx.services.pools.get(other.workspace.id, theirs.pool_id)).members[0].paused).toBe(false);

    const confirm = await text(`/dashboard/pools/${pool.pool_id}/delete`);
    expect(confirm).toContain(`<h2 id="confirm-title">Delete "Shop"?</h2>`);
    expect((await post(`/dashboard/pools/${pool.pool_id}/delete`, { _csrf: csrf })).status).toBe(303);
    expect(await pools()).toEqual([]);
    const list = await text("/dashboard/pools");
    expect(list).toContain("Pool &quot;Shop&quot; deleted.");
    expect(list).toContain("No pool yet.");
  });

  test("every page's navigation is Overview and four groups, with the current page marked and the Menu button left to the script", async () => {
    for (const [path, group, label] of [
      ["/dashboard/pools", "Devices", "Pools"],
      ["/dashboard/contacts", "Audience", "Contacts"],
      ["/dashboard/keys", "Settings", "API keys"],
    ]) {
      const page = await text(path);
      const nav = /<nav class="main" aria-label="Main">([\s\S]*?)<\/nav>/.exec(page)![1];
      expect([...nav.matchAll(/<summary>([^<]+)<\/summary>/g)].map((m) => m[1])).toEqual(["Sending", "Audience", "Devices", "Settings"]);
      expect(nav).toContain('<li><a href="/dashboard">Overview</a></li>');
      expect(nav).toMatch(
        /<button type="button" class="nav-toggle secondary" aria-expanded="false" aria-controls="nav-menu" hidden>Menu<\/button>/,
      );
      // The current page, in its group, and only it.
      expect([...nav.matchAll(/aria-current="page">([^<]+)</g)].map((m) => m[1])).toEqual([label]);
      const groupHtml = new RegExp(`<summary>${group}</summary><ul>([\\s\\S]*?)</ul>`).exec(nav)![1];
      expect(groupHtml).toContain(`aria-current="page">${label}<`);
    }
  });
});
