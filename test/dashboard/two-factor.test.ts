// Two-factor sign-in in process with a manual clock, on either back end: enrolment shows a QR code
// and the secret, a code computed by Python's standard library from that secret confirms it and
// signs in; the password alone then grants no page; a code is not accepted twice; recovery codes
// work once; the pending step expires; the sign-in throttle counts the second step; turning it off
// needs a current code; an owner's requirement holds members at enrolment; the secret is sealed.
import { describe, expect, test } from "bun:test";
import { createTestContext } from "../helpers/context";
import { pythonTotp, secretOnPage } from "../helpers/totp-judge";

const EMAIL = "owner@example.com";
const PASSWORD = "a long enough secret";
const MEMBER = "clerk@example.com";

type Ctx = Awaited<ReturnType<typeof createTestContext>>;

const get = (ctx: Ctx, path: string, cookie = "") =>
  ctx.app.handle(new Request(`http://localhost${path}`, { headers: cookie ? { cookie } : {}, redirect: "manual" }));

const post = (ctx: Ctx, path: string, fields: Record<string, string>, cookie = "") =>
  ctx.app.handle(
    new Request(`http://localhost${path}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", ...(cookie ? { cookie } : {}) },
      body: new URLSearchParams(fields).toString(),
    }),
  );

const cookieValue = (res: Response, name: string) => new RegExp(`${name}=([^;]*)`).exec(res.headers.getSetCookie().join("\n"))?.[1] ?? null;
const csrfOf = (page: string) => /name="_csrf" value="([0-9a-f]{32})"/.exec(page)![1];

/** The password step as a browser does it: its answer, and the cookies it set. */
async function password(ctx: Ctx, email = EMAIL, pass = PASSWORD) {
  const form = await get(ctx, "/dashboard/sign-in");
  const pre = cookieValue(form, "pigeon_presession")!;
  const res = await post(ctx, "/dashboard/sign-in", { _csrf: pre, email, password: pass }, `pigeon_presession=${pre}`);
  return { res, pre, pending: cookieValue(res, "pigeon_2fa"), session: cookieValue(res, "pigeon_session") };
}

/** The second step with the pending cookie from `password`. */
async function secondStep(ctx: Ctx, step: { pre: string; pending: string | null }, code: string) {
  const res = await post(
    ctx,
    "/dashboard/sign-in/code",
    { _csrf: step.pre, code },
    `pigeon_presession=${step.pre}; pigeon_2fa=${step.pending}`,
  );
  return { res, session: cookieValue(res, "pigeon_session") };
}

/** Signs in with the password alone (no second factor yet); the session cookie header. */
async function plainSignIn(ctx: Ctx, email = EMAIL) {
  const { res, session } = await password(ctx, email);
  expect(res.status).toBe(303);
  expect(res.headers.get("location")).toBe("/dashboard");
  return `pigeon_session=${session}`;
}

/** Enrols the signed-in user through the pages; the secret shown and the recovery codes. */
async function enrol(ctx: Ctx, cookie: string) {
  const page = await (await get(ctx, "/dashboard/account/2fa", cookie)).text();
  expect(page).toContain("<svg");
  expect(page).toContain('aria-label="QR code for adding');
  const secret = secretOnPage(page);
  // A reload shows the same secret until it is confirmed.
  expect(secretOnPage(await (await get(ctx, "/dashboard/account/2fa", cookie)).text())).toBe(secret);
  const done = await post(
    ctx,
    "/dashboard/account/2fa/confirm",
    { _csrf: csrfOf(page), code: pythonTotp(secret, ctx.clock.now()) },
    cookie,
  );
  expect(done.status).toBe(200);
  const shown = await done.text();
  const codes = [...shown.matchAll(/<li><code>([a-z2-7]{5}-[a-z2-7]{5})<\/code><\/li>/g)].map((m) => m[1]);
  expect(codes.length).toBe(10);
  expect(new Set(codes).size).toBe(10);
  return { secret, codes };
}

async function enrolled() {
  const ctx = await createTestContext();
  await ctx.services.users.createUser({ email: EMAIL, password: PASSWORD });
  const cookie = await plainSignIn(ctx);
  return { ctx, cookie, ...(await enrol(ctx, cookie)) };
}

describe("two-factor sign-in", () => {
  test("a wrong code does not turn it on; Python's code for the shown secret does, and the recovery codes come once", async () => {
    const ctx = await createTestContext();
    await ctx.services.users.createUser({ email: EMAIL, password: PASSWORD });
    const cookie = await plainSignIn(ctx);
    const page = await (await get(ctx, "/dashboard/account/2fa", cookie)).text();
    const secret = secretOnPage(page);
    const right = pythonTotp(secret, ctx.clock.now());
    const wrong = right === "000000" ? "111111" : "000000";
    const refused = await post(ctx, "/dashboard/account/2fa/confirm", { _csrf: csrfOf(page), code: wrong }, cookie);
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain("does not match");
    const ok = await post(ctx, "/dashboard/account/2fa/confirm", { _csrf: csrfOf(page), code: right }, cookie);
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain("shown only this once");
    const after = await (await get(ctx, "/dashboard/account/2fa", cookie)).text();
    expect(after).toContain("Two-factor sign-in is on");
    expect(after).toContain("10 of 10 recovery codes left");
    expect(after).not.toContain(secret.replace(/ /g, "").slice(0, 8));
    expect(await (await get(ctx, "/dashboard/account", cookie)).text()).toContain("On for you");
  });

  test("the secret is sealed at rest and the recovery codes are kept as digests", async () => {
    const { ctx, secret, codes } = await enrolled();
    const row = (await ctx.services.storage.get<{ totp_secret: string; totp_pending: string | null }>(
      "SELECT totp_secret, totp_pending FROM dashboard_user WHERE email = ?",
      [EMAIL],
    ))!;
    expect(row.totp_secret.startsWith("enc:v1:")).toBe(true);
    expect(row.totp_secret).not.toContain(secret.replace(/ /g, ""));
    expect(row.totp_pending).toBeNull();
    const hashes = (await ctx.services.storage.all<{ code_hash: string }>("SELECT code_hash FROM dashboard_recovery_code", [])).map(
      (r) => r.code_hash,
    );
    expect(hashes.length).toBe(10);
    for (const code of codes) for (const hash of hashes) expect(hash).not.toContain(code.replace("-", ""));
  });

  test("once on, the password alone grants no page; Python's code signs in, and the same code is not accepted twice", async () => {
    const { ctx, secret } = await enrolled();
    // Past the minute of the throttle (which counts every attempt) and into the next step.
    ctx.clock.advance(60_000);
    const step = await password(ctx);
    expect(step.res.status).toBe(303);
    expect(step.res.headers.get("location")).toBe("/dashboard/sign-in/code");
    expect(step.session).toBeNull();
    expect(step.pending).not.toBeNull();
    // The pending cookie is no session: every page still sends the browser to sign in.
    for (const path of ["/dashboard", "/dashboard/account", "/dashboard/keys", "/dashboard/account/2fa"]) {
      const res = await get(ctx, path, `pigeon_2fa=${step.pending}`);
      expect({ path, status: res.status, to: res.headers.get("location") }).toEqual({ path, status: 303, to: "/dashboard/sign-in" });
    }
    expect((await get(ctx, "/dashboard/sign-in/code", `pigeon_2fa=${step.pending}`)).status).toBe(200);
    // A forged or altered token is not a pending sign-in.
    const forged = `${step.pending!.slice(0, -1)}${step.pending!.endsWith("0") ? "1" : "0"}`;
    expect((await get(ctx, "/dashboard/sign-in/code", `pigeon_2fa=${forged}`)).status).toBe(303);

    const wrong = await secondStep(ctx, step, "123456" === pythonTotp(secret, ctx.clock.now()) ? "654321" : "123456");
    expect(wrong.res.status).toBe(401);
    expect(wrong.session).toBeNull();
    const code = pythonTotp(secret, ctx.clock.now());
    const ok = await secondStep(ctx, step, code);
    expect(ok.res.status).toBe(303);
    expect(ok.res.headers.get("location")).toBe("/dashboard");
    expect((await get(ctx, "/dashboard", `pigeon_session=${ok.session}`)).status).toBe(200);
    // The spent pending token does not sign in again, nor does the same code with a new one.
    expect((await secondStep(ctx, step, code)).res.status).toBe(303);
    expect((await secondStep(ctx, step, code)).session).toBeNull();
    const again = await password(ctx);
    expect((await secondStep(ctx, again, code)).res.status).toBe(401);
    // A later step's code works (past the throttle's minute).
    ctx.clock.advance(60_001);
    expect((await secondStep(ctx, again, pythonTotp(secret, ctx.clock.now()))).res.status).toBe(303);
  });

  test("a code from the step before still works (a phone's clock a little behind), two steps before does not", async () => {
    const { ctx, secret } = await enrolled();
    ctx.clock.advance(120_000);
    const step = await password(ctx);
    expect((await secondStep(ctx, step, pythonTotp(secret, ctx.clock.now() - 60_000))).res.status).toBe(401);
    expect((await secondStep(ctx, step, pythonTotp(secret, ctx.clock.now() - 30_000))).res.status).toBe(303);
  });

  test("a recovery code signs in once, typed in any case and spacing", async () => {
    const { ctx, codes, cookie } = await enrolled();
    ctx.clock.advance(60_001);
    const first = await password(ctx);
    const ok = await secondStep(ctx, first, ` ${codes[3].toUpperCase().replace("-", " ")} `);
    expect(ok.res.status).toBe(303);
    expect(ok.session).not.toBeNull();
    const second = await password(ctx);
    expect((await secondStep(ctx, second, codes[3])).res.status).toBe(401);
    expect((await secondStep(ctx, second, codes[4])).res.status).toBe(303);
    expect(await (await get(ctx, "/dashboard/account/2fa", cookie)).text()).toContain("8 of 10 recovery codes left");
  });

  test("the second step waits five minutes, then starts over at the password", async () => {
    const { ctx, secret } = await enrolled();
    ctx.clock.advance(30_000);
    const step = await password(ctx);
    ctx.clock.advance(5 * 60_000 + 1);
    const late = await get(ctx, "/dashboard/sign-in/code", `pigeon_2fa=${step.pending}`);
    expect(late.headers.get("location")).toBe("/dashboard/sign-in");
    const res = await secondStep(ctx, step, pythonTotp(secret, ctx.clock.now()));
    expect(res.res.status).toBe(303);
    expect(res.res.headers.get("location")).toBe("/dashboard/sign-in");
    expect(res.session).toBeNull();
  });

  test("the sign-in throttle counts the second step: after the password and four wrong codes, the right one waits", async () => {
    const { ctx, secret } = await enrolled();
    ctx.clock.advance(60_001);
    const step = await password(ctx);
    for (let i = 0; i < 4; i++) expect((await secondStep(ctx, step, `00000${i}`)).res.status).toBe(401);
    const held = await secondStep(ctx, step, pythonTotp(secret, ctx.clock.now()));
    expect(held.res.status).toBe(429);
    expect(held.session).toBeNull();
    expect(Number(held.res.headers.get("retry-after"))).toBeGreaterThan(0);
    ctx.clock.advance(60_001);
    const fresh = await password(ctx);
    expect((await secondStep(ctx, fresh, pythonTotp(secret, ctx.clock.now()))).res.status).toBe(303);
  });

  test("turning it off needs a current code; then the password alone signs in", async () => {
    const { ctx, secret, cookie } = await enrolled();
    ctx.clock.advance(30_000);
    const page = await (await get(ctx, "/dashboard/account/2fa", cookie)).text();
    const refused = await post(ctx, "/dashboard/account/2fa/disable", { _csrf: csrfOf(page), code: "12345x" }, cookie);
    expect(refused.status).toBe(400);
    expect((await password(ctx)).pending).not.toBeNull();
    const off = await post(
      ctx,
      "/dashboard/account/2fa/disable",
      { _csrf: csrfOf(page), code: pythonTotp(secret, ctx.clock.now()) },
      cookie,
    );
    expect(off.status).toBe(303);
    expect((await ctx.services.storage.all("SELECT id FROM dashboard_recovery_code", [])).length).toBe(0);
    await plainSignIn(ctx);
  });

  test("an owner's requirement holds a member at enrolment until the member has it", async () => {
    const { ctx, cookie } = await enrolled();
    await ctx.services.users.createUser({ email: MEMBER, password: PASSWORD, role: "member" });
    const memberCookie = await plainSignIn(ctx, MEMBER);
    const memberPage = await (await get(ctx, "/dashboard/account/2fa", memberCookie)).text();
    // A member cannot set the requirement.
    expect((await post(ctx, "/dashboard/account/2fa/require", { _csrf: csrfOf(memberPage), required: "yes" }, memberCookie)).status).toBe(
      403,
    );
    expect(await ctx.services.users.twoFactor.required(1)).toBe(false);

    const ownerPage = await (await get(ctx, "/dashboard/account/2fa", cookie)).text();
    expect((await post(ctx, "/dashboard/account/2fa/require", { _csrf: csrfOf(ownerPage), required: "yes" }, cookie)).status).toBe(303);
    expect(await (await get(ctx, "/dashboard/account/2fa", cookie)).text()).toContain("Two-factor sign-in is required");

    // The member's session now reaches the enrolment page only.
    for (const path of ["/dashboard", "/dashboard/keys", "/dashboard/account", "/dashboard/messages"]) {
      const res = await get(ctx, path, memberCookie);
      expect({ path, status: res.status, to: res.headers.get("location") }).toEqual({ path, status: 303, to: "/dashboard/account/2fa" });
    }
    expect((await post(ctx, "/dashboard/keys", { _csrf: csrfOf(memberPage), name: "Sneaky" }, memberCookie)).status).toBe(403);
    // A fresh sign-in with the password goes the same way.
    const fresh = await plainSignIn(ctx, MEMBER);
    expect((await get(ctx, "/dashboard", fresh)).headers.get("location")).toBe("/dashboard/account/2fa");
    const enrolPage = await get(ctx, "/dashboard/account/2fa", fresh);
    expect(enrolPage.status).toBe(200);
    expect(await enrolPage.text()).toContain("This account requires two-factor sign-in");

    await enrol(ctx, fresh);
    expect((await get(ctx, "/dashboard", fresh)).status).toBe(200);
    // Required, it cannot be turned off by the member.
    const on = await (await get(ctx, "/dashboard/account/2fa", fresh)).text();
    expect(on).toContain("cannot be turned off here");
    expect((await post(ctx, "/dashboard/account/2fa/disable", { _csrf: csrfOf(on), code: "000000" }, fresh)).status).toBe(403);
  });

  test("an owner without it cannot require it of others", async () => {
    const ctx = await createTestContext();
    await ctx.services.users.createUser({ email: EMAIL, password: PASSWORD });
    const cookie = await plainSignIn(ctx);
    const page = await (await get(ctx, "/dashboard/account/2fa", cookie)).text();
    const res = await post(ctx, "/dashboard/account/2fa/require", { _csrf: csrfOf(page), required: "yes" }, cookie);
    expect(res.status).toBe(400);
    expect(await res.text()).toContain("Turn on two-factor sign-in for yourself first");
    expect(await ctx.services.users.twoFactor.required(1)).toBe(false);
  });

  test("turning it on signs out the user's other sessions, not the one that turned it on; a reset signs out all", async () => {
    const ctx = await createTestContext();
    await ctx.services.users.createUser({ email: EMAIL, password: PASSWORD });
    const elsewhere = await plainSignIn(ctx);
    const here = await plainSignIn(ctx);
    expect((await get(ctx, "/dashboard", elsewhere)).status).toBe(200);
    await enrol(ctx, here);
    // The session signed in with the password alone ends: it would otherwise outlive the new factor.
    const stale = await get(ctx, "/dashboard", elsewhere);
    expect(stale.status).toBe(303);
    expect(stale.headers.get("location")).toStartWith("/dashboard/sign-in");
    expect((await get(ctx, "/dashboard", here)).status).toBe(200);
    await ctx.services.users.twoFactor.reset(EMAIL);
    const after = await get(ctx, "/dashboard", here);
    expect(after.status).toBe(303);
    expect(after.headers.get("location")).toStartWith("/dashboard/sign-in");
  });

  test("a reset removes it and its recovery codes; an unknown email is not found", async () => {
    const { ctx } = await enrolled();
    expect(await ctx.services.users.twoFactor.reset(" Owner@Example.com ")).toEqual({ email: EMAIL, hadTwoFactor: true });
    expect((await ctx.services.storage.all("SELECT id FROM dashboard_recovery_code", [])).length).toBe(0);
    await plainSignIn(ctx);
    expect(await ctx.services.users.twoFactor.reset(EMAIL)).toEqual({ email: EMAIL, hadTwoFactor: false });
    await expect(ctx.services.users.twoFactor.reset("nobody@example.com")).rejects.toThrow("No user with the email nobody@example.com");
  });
});
