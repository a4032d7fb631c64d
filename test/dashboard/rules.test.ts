// The dashboard's Rules page in process, with a manual clock: the form refuses what the API refuses
// beside the field, keeping what was typed; rules are created from it (a webhook rule's secret shown
// once) and listed in priority order with what each matches and does; the tester answers htmx with
// the result alone and a plain post with the whole page, naming the rules a message sets off, the
// replies held back and the keywords no rule hears; rules move up and down, are disabled and
// enabled, and deleted after a confirmation; another workspace's rule is not found; a member user
// manages rules as an owner does.
import { beforeAll, describe, expect, test } from "bun:test";
import { DASHBOARD_PASSWORD, dashboardRequests } from "../helpers/dashboard-requests";
import { createTestContext, expectEnvelope, type TestContext } from "../helpers/context";

const EMAIL = "owner@example.com";
const MEMBER_EMAIL = "member@example.com";
const HOOK = "http://127.0.0.1:9/rule";

describe("the Rules page", () => {
  let ctx: TestContext;
  let cookie = "";
  let csrf = "";

  const { get, post, text, signIn } = dashboardRequests(
    () => ctx,
    () => cookie,
    "/dashboard/rules",
  );
  /** The tester as htmx asks it: the CSRF token in a header, the result alone back. */
  const tester = async (fields: Record<string, string>) => {
    const res = await post("/dashboard/rules/test", fields, cookie, { "hx-request": "true", "x-csrf-token": csrf });
    expect(res.status).toBe(200);
    return res.text();
  };

  const rules = async () => (await ctx.services.rules.list(ctx.workspace.id)).rules;
  const names = async () => (await rules()).map((r) => r.name);
  const byName = async (name: string) => (await rules()).find((r) => r.name === name)!;
  /** The rule names in the order the page lists them. */
  const listed = (page: string) => [...page.matchAll(/<td data-label="Rule"><span><strong>([^<]+)<\/strong>/g)].map((m) => m[1]);

  /** A complete form: a keyword rule that replies, with every channel and the weekdays ticked. */
  const form = (fields: Record<string, string>) => ({
    _csrf: csrf,
    match_type: "keyword",
    "channel:sms": "1",
    "channel:chatapp": "1",
    "day:mon": "1",
    "day:tue": "1",
    "day:wed": "1",
    "day:thu": "1",
    "day:fri": "1",
    ...fields,
  });

  beforeAll(async () => {
    ctx = await createTestContext();
    await ctx.services.users.createUser({ email: EMAIL, password: DASHBOARD_PASSWORD });
    await ctx.services.users.createUser({ email: MEMBER_EMAIL, password: DASHBOARD_PASSWORD, role: "member" });
    ({ cookie, csrf } = await signIn(EMAIL));
  });

  test("with no rule the page says how to start; the tester waits for a message; the page is Rules in the navigation", async () => {
    const page = await text("/dashboard/rules");
    expect(page).toContain("<title>Rules · Pigeon</title>");
    expect(page).toContain('aria-current="page">Rules<');
    expect(page).toContain("No rule yet.");
    expect(page).toContain(
      '<div id="test-result" aria-live="polite"><p class="hint">Type a message to see which rules it would set off.</p></div>',
    );
    expect(page).toContain('hx-post="/dashboard/rules/test" hx-trigger="input changed delay:300ms, submit" hx-target="#test-result"');
    // Without a script the Test button posts the same form.
    expect(page).toContain('action="/dashboard/rules/test#test-title"');
    expect(page).toContain('<button type="submit">Test</button>');
  });

  test("a form the API would refuse is shown again with the reason beside its field and what was typed", async () => {
    const nothing = await post("/dashboard/rules", form({ name: "Prices", match_value: "price" }));
    expect(nothing.status).toBe(400);
    const nothingHtml = await nothing.text();
    expect(nothingHtml).toContain('id="r-action-error" role="alert">Give the rule something to do');
    expect(nothingHtml).toContain('<p class="error">The rule was not created: <a href="#new-title">see the form below</a>.</p>');
    expect(nothingHtml).toContain('value="Prices"');

    const noChannel = await post("/dashboard/rules", {
      ...form({ name: "Prices", match_value: "price", tag: "x" }),
      "channel:sms": "",
      "channel:chatapp": "",
    });
    expect(noChannel.status).toBe(400);
    expect(await noChannel.text()).toContain('id="r-channels-error" role="alert">Choose at least one channel.');

    // The service's own refusals: its message, beside the field it names.
    const badRegex = await post("/dashboard/rules", form({ name: "Orders", match_type: "regex", match_value: "(a", tag: "x" }));
    expect(badRegex.status).toBe(400);
    const badRegexHtml = await badRegex.text();
    expect(badRegexHtml).toMatch(/id="r-match-value-error" role="alert">Invalid body field &#39;match.regex&#39;: .*RE2 syntax/);
    expect(badRegexHtml).toContain('aria-describedby="r-match-hint r-match-value-error" aria-invalid="true"');
    expect(badRegexHtml).toContain('value="(a"');
    expect(badRegexHtml).toMatch(/<option value="regex" selected>/);

    const badNumber = await post("/dashboard/rules", form({ name: "Staff", match_value: "help-me", forward_to: "not a number" }));
    expect(badNumber.status).toBe(400);
    expect(await badNumber.text()).toContain('id="r-forward-error" role="alert">Invalid phone number &quot;not a number&quot;');

    const badHook = await post("/dashboard/rules", form({ name: "Hook", match_value: "order", webhook_url: "ftp://example.com/x" }));
    expect(badHook.status).toBe(400);
    expect(await badHook.text()).toContain('id="r-webhook-error" role="alert">action.webhook.url must use http or https');

    const halfHours = await post(
      "/dashboard/rules",
      form({ name: "Closed", match_type: "any", reply_text: "Closed", hours_start: "09:00" }),
    );
    expect(halfHours.status).toBe(400);
    expect(await halfHours.text()).toContain('id="r-hours-error" role="alert">Give both the opening and the closing time, or neither.');

    const noDays = await post("/dashboard/rules", {
      _csrf: csrf,
      name: "Closed",
      match_type: "any",
      "channel:sms": "1",
      reply_text: "Closed",
      hours_start: "09:00",
      hours_end: "17:00",
    });
    expect(noDays.status).toBe(400);
    expect(await noDays.text()).toContain('id="r-days-error" role="alert">Invalid body field &#39;when.outside_hours.days&#39;');
    expect(await rules()).toEqual([]);
  });

  test("rules are created from the form and listed in the order they are tried, with what each matches and does", async () => {
    const prices = await post(
      "/dashboard/rules",
      form({ name: "Prices", match_value: "price, COST", reply_text: "Our prices: example.com/prices", tag: "asked-price" }),
    );
    expect(prices.status).toBe(303);
    expect(prices.headers.get("location")).toBe("/dashboard/rules");
    expect(await text("/dashboard/rules")).toContain(
      'role="status">Rule &quot;Prices&quot; created: it is tried after the rules before it.',
    );

    const closed = await post(
      "/dashboard/rules",
      form({
        name: "Closed",
        match_type: "any",
        "channel:chatapp": "",
        reply_text: "We are closed; we answer from 9:00 on weekdays.",
        forward_to: "+1 (415) 555-0199",
        continue: "1",
        hours_start: "09:00",
        hours_end: "17:00",
      }),
    );
    expect(closed.status).toBe(303);

    // A webhook rule: its signing secret is on the next page, and only there.
    const hook = await post(
      "/dashboard/rules",
      form({ name: "Orders", match_type: "regex", match_value: "order\\s+\\d+", webhook_url: HOOK }),
    );
    expect(hook.status).toBe(303);
    const once = await text("/dashboard/rules");
    const secret = /<code class="secret" id="new-secret">([^<]+)<\/code>/.exec(once)?.[1];
    expect(secret).toBeString();
    expect(once).toContain(`For rule "Orders", posting to <code>${HOOK}</code>.`);
    const page = await text("/dashboard/rules");
    expect(page).not.toContain(secret!);

    expect((await rules()).map((r) => [r.name, r.match, r.channels, r.action, r.continue, r.when])).toEqual([
      [
        "Prices",
        { keyword: ["PRICE", "COST"] },
        null,
        { reply: { text: "Our prices: example.com/prices" }, tag: "asked-price" },
        false,
        null,
      ],
      [
        "Closed",
        { any: true },
        ["sms"],
        { reply: { text: "We are closed; we answer from 9:00 on weekdays." }, forward: { to: "+14155550199", channel: "sms" } },
        true,
        { outside_hours: { start: "09:00", end: "17:00", days: ["mon", "tue", "wed", "thu", "fri"] } },
      ],
      ["Orders", { regex: "order\\s+\\d+" }, null, { webhook: { url: HOOK, webhook_id: expect.any(Number) } }, false, null],
    ]);

    expect(listed(page)).toEqual(["Prices", "Closed", "Orders"]);
    expect(page).toContain("First word one of <code>PRICE</code>, <code>COST</code>");
    expect(page).toContain("Replies “Our prices: example.com/prices”");
    expect(page).toContain("Tags the sender <code>asked-price</code>");
    expect(page).toContain("Forwards to +14155550199");
    expect(page).toContain(`Posts to <code>${HOOK}</code>`);
    expect(page).toContain("Pattern <code>order\\s+\\d+</code>");
    expect(page).toContain('<span class="hint">Every channel</span>');
    expect(page).toContain('<span class="hint">SMS</span>');
    expect(page).toContain("Outside 09:00–17:00 on Mon, Tue, Wed, Thu, Fri (UTC); all day on other days");
    expect(page).toContain("Then the next matching rule may act too.");
    expect(page).toContain('<td data-label="Matched"><span>0 times</span></td>');
    // The first has no Move up, the last no Move down; every button names its rule.
    expect(page).not.toContain('aria-label="Move up rule Prices"');
    expect(page).toContain('aria-label="Move down rule Prices"');
    expect(page).toContain('aria-label="Move up rule Orders"');
    expect(page).not.toContain('aria-label="Move down rule Orders"');
    expect(page).toContain('aria-label="Disable rule Closed"');
    expect(page).toContain('href="/dashboard/rules/');
    expect(page).toContain('aria-label="Delete rule Orders"');

    const taken = await post("/dashboard/rules", form({ name: "Prices", match_value: "other", tag: "x" }));
    expect(taken.status).toBe(409);
    expect(await taken.text()).toContain('id="r-name-error" role="alert">A rule named &quot;Prices&quot; already exists');
  });

  test("the tester answers htmx with the rules a message sets off and what each would do, and nothing happens", async () => {
    const price = await tester({ body: "Price?", from: "+14155550100", channel: "sms" });
    expect(price).not.toContain("<html");
    expect(price).toContain("<strong>1 rule would act</strong>");
    expect(price).toContain(
      "<li><strong>Prices</strong><ul><li>Replies “Our prices: example.com/prices”</li><li>Tags the sender <code>asked-price</code></li></ul></li>",
    );

    // 12:00 on a Thursday: open, so "Closed" does not hold; at 20:00 it does, and lets the next act.
    expect(await tester({ body: "order 12 please", channel: "sms" })).toContain("<strong>Orders</strong>");
    expect(await tester({ body: "hello", channel: "sms" })).toContain("<strong>No rule matches.</strong>");
    ctx.clock.advance(8 * 3_600_000);
    const evening = await tester({ body: "order 12 please", from: "+14155550100", channel: "sms" });
    expect(evening).toContain("<strong>2 rules would act</strong>");
    expect(evening).toMatch(/<strong>Closed<\/strong>[\s\S]*<strong>Orders<\/strong>/);
    expect(evening).toContain("Forwards to +14155550199");
    // "Closed" hears SMS only.
    expect(await tester({ body: "order 12 please", channel: "chatapp" })).toContain("<strong>1 rule would act</strong>");

    // An opted-out sender: the reply is held back and says why; the rest still acts.
    expectEnvelope(await ctx.post("/v1/api/optout/add", { phone: "+14155550111" }), 200);
    const optedOut = await tester({ body: "price", from: "+14155550111", channel: "sms" });
    expect(optedOut).toContain('<span class="error-text">Reply held back: the sender opted out.</span>');
    expect(optedOut).toContain("Tags the sender <code>asked-price</code>");
    ctx.clock.advance(-8 * 3_600_000);

    // A keyword is answered by Safe sending: no rule hears it.
    expect(await tester({ body: "stop", channel: "sms" })).toContain("this is an opt-out keyword, which Safe sending answers by itself");
    expect(await tester({ body: "  ", channel: "sms" })).toContain("Type a message to see which rules it would set off.");
    expect(await tester({ body: "price", from: "nope", channel: "sms" })).toContain(
      '<p class="error">Invalid phone number &quot;nope&quot;: from must be E.164</p>',
    );
    // Testing changes nothing.
    expect((await rules()).map((r) => r.matched_count)).toEqual([0, 0, 0]);
    expect(await ctx.sql.get<{ n: number }>("SELECT COUNT(*) AS n FROM contact WHERE workspace_id = ?", [ctx.workspace.id])).toEqual({
      n: 0,
    });
  });

  test("without a script the Test button gets the whole page, with the result and what was typed", async () => {
    const res = await post("/dashboard/rules/test", { _csrf: csrf, body: "COST please", from: "+14155550100", channel: "sms" });
    expect(res.status).toBe(200);
    const page = await res.text();
    expect(page).toContain("<title>Rules · Pigeon</title>");
    expect(page).toMatch(/<div id="test-result" aria-live="polite"><p><strong>1 rule would act<\/strong>[\s\S]*<strong>Prices<\/strong>/);
    expect(page).toContain('id="t-body" name="body" maxlength="4096" autocomplete="off" value="COST please"');
    expect(page).toContain('value="+14155550100"');
    // Its address opened again is the page.
    const again = await get("/dashboard/rules/test");
    expect([again.status, again.headers.get("location")]).toEqual([303, "/dashboard/rules"]);
  });

  test("Move up and Move down change the order the rules are tried in", async () => {
    const orders = await byName("Orders");
    expect((await post(`/dashboard/rules/${orders.rule_id}/move`, { _csrf: csrf, direction: "up" })).status).toBe(303);
    expect(await names()).toEqual(["Prices", "Orders", "Closed"]);
    const page = await text("/dashboard/rules");
    expect(page).toContain("Rule &quot;Orders&quot; is now tried 2nd.");
    expect(listed(page)).toEqual(["Prices", "Orders", "Closed"]);

    const prices = await byName("Prices");
    await post(`/dashboard/rules/${prices.rule_id}/move`, { _csrf: csrf, direction: "down" });
    expect(await names()).toEqual(["Orders", "Prices", "Closed"]);
    // The first cannot go higher: nothing changes.
    await post(`/dashboard/rules/${orders.rule_id}/move`, { _csrf: csrf, direction: "up" });
    expect(await names()).toEqual(["Orders", "Prices", "Closed"]);
    expect((await rules()).map((r) => r.priority)).toEqual([10, 20, 30]);
  });

  test("a disabled rule is marked, skipped by the tester, and enabled again", async () => {
    const prices = await byName("Prices");
    expect((await post(`/dashboard/rules/${prices.rule_id}/enabled`, { _csrf: csrf, enabled: "0" })).status).toBe(303);
    expect((await byName("Prices")).enabled).toBe(false);
    const page = await text("/dashboard/rules");
    expect(page).toContain("Rule &quot;Prices&quot; disabled: it is skipped.");
    expect(page).toContain('<span class="badge disabled">disabled</span>');
    expect(page).toContain('aria-label="Enable rule Prices"');
    expect(await tester({ body: "price", channel: "sms" })).toContain("No rule matches.");

    await post(`/dashboard/rules/${prices.rule_id}/enabled`, { _csrf: csrf, enabled: "1" });
    expect((await byName("Prices")).enabled).toBe(true);
    expect(await text("/dashboard/rules")).toContain("Rule &quot;Prices&quot; enabled");
  });

  test("a rule whose webhook subscription was deleted by hand gets a new one when it is changed, its secret shown once", async () => {
    const orders = await byName("Orders");
    const hookId = (orders.action as { webhook: { webhook_id: number } }).webhook.webhook_id;
    await ctx.services.webhooks.remove(ctx.workspace.id, hookId);
    await post(`/dashboard/rules/${orders.rule_id}/enabled`, { _csrf: csrf, enabled: "0" });
    const page = await text("/dashboard/rules");
    expect(page).toContain("Rule &quot;Orders&quot; disabled: it is skipped.");
    expect(page).toContain('<code class="secret" id="new-secret">');
    const again = (await byName("Orders")).action as { webhook: { url: string; webhook_id: number } };
    expect(again.webhook.url).toBe(HOOK);
    expect(again.webhook.webhook_id).not.toBe(hookId);
    await post(`/dashboard/rules/${orders.rule_id}/enabled`, { _csrf: csrf, enabled: "1" });
    expect(await text("/dashboard/rules")).not.toContain('id="new-secret"');
  });

  test("without the CSRF token nothing changes; another workspace's rule is not found", async () => {
    const prices = await byName("Prices");
    expect((await post(`/dashboard/rules/${prices.rule_id}/delete`, {})).status).toBe(403);
    expect((await post(`/dashboard/rules/${prices.rule_id}/enabled`, { enabled: "0" })).status).toBe(403);
    expect((await post("/dashboard/rules", { ...form({ name: "Sneaky", match_type: "any", tag: "x" }), _csrf: "" })).status).toBe(403);
    expect(await names()).toEqual(["Orders", "Prices", "Closed"]);

    const other = await ctx.otherWorkspace("Elsewhere");
    const theirs = await ctx.services.rules.create(other.workspace.id, { name: "Theirs", match: { any: true }, action: { tag: "x" } });
    for (const res of [
      await get(`/dashboard/rules/${theirs.rule_id}/delete`),
      await post(`/dashboard/rules/${theirs.rule_id}/delete`, { _csrf: csrf }),
      await post(`/dashboard/rules/${theirs.rule_id}/move`, { _csrf: csrf, direction: "up" }),
      await post(`/dashboard/rules/${theirs.rule_id}/enabled`, { _csrf: csrf, enabled: "0" }),
    ]) {
      expect(res.status).toBe(404);
      expect(await res.text()).toContain(`rule ${theirs.rule_id} not found`);
    }
    expect((await ctx.services.rules.get(other.workspace.id, theirs.rule_id)).enabled).toBe(true);
    // And this workspace's tester does not see it.
    expect(await tester({ body: "anything", channel: "chatapp" })).toContain("No rule matches.");
  });

  test("a member user manages the rules as an owner does", async () => {
    const member = await signIn(MEMBER_EMAIL);
    const page = await text("/dashboard/rules", member.cookie);
    expect(page).toContain("(member)");
    expect(listed(page)).toEqual(["Orders", "Prices", "Closed"]);
    const made = await post(
      "/dashboard/rules",
      { ...form({ name: "Hours", match_value: "hours", reply_text: "9 to 5" }), _csrf: member.csrf },
      member.cookie,
    );
    expect(made.status).toBe(303);
    expect(await names()).toEqual(["Orders", "Prices", "Closed", "Hours"]);
  });

  test("deleting asks first; the rule's webhook subscription goes with it", async () => {
    const orders = await byName("Orders");
    const hookId = (orders.action as { webhook: { webhook_id: number } }).webhook.webhook_id;
    const confirm = await text(`/dashboard/rules/${orders.rule_id}/delete`);
    expect(confirm).toContain('<h2 id="confirm-title">Delete "Orders"?</h2>');
    expect(confirm).toContain("its webhook subscription is deleted with it");
    expect(confirm).toContain('<a class="button secondary" href="/dashboard/rules">Keep it</a>');
    expect(await names()).toContain("Orders");

    const res = await post(`/dashboard/rules/${orders.rule_id}/delete`, { _csrf: csrf });
    expect(res.status).toBe(303);
    expect(await names()).toEqual(["Prices", "Closed", "Hours"]);
    expect(await ctx.services.webhooks.get(ctx.workspace.id, hookId).catch((e: Error) => e.message)).toBe(`webhook ${hookId} not found`);
    const page = await text("/dashboard/rules");
    expect(page).toContain("Rule &quot;Orders&quot; deleted.");
    expect(listed(page)).toEqual(["Prices", "Closed", "Hours"]);
  });
});
