// Two-factor sign-in on the compiled binary: enrolled through the dashboard with a code Python
// computes from the secret the page shows (at Python's own clock), the password alone then stops
// at the second step and Python's next code signs in; `pigeon users reset-2fa` removes it (the
// password alone signs in again) and refuses an unknown email clearly.
import { describe, expect, test } from "bun:test";
import { isolatedBinary, runCommand, startServer, tempDir } from "../helpers/binary";
import { pythonTotp, secretOnPage } from "../helpers/totp-judge";

const EMAIL = "owner@example.com";
const PASSWORD = "a long enough secret";
const presessionOf = (res: Response) => /pigeon_presession=([A-Za-z0-9]+)/.exec(res.headers.getSetCookie().join("\n"))![1];
const cookieOf = (res: Response, name: string) => new RegExp(`${name}=([^;]+)`).exec(res.headers.getSetCookie().join("\n"))?.[1] ?? null;
const form = (fields: Record<string, string>, cookie: string) => ({
  method: "POST",
  redirect: "manual" as const,
  headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
  body: new URLSearchParams(fields).toString(),
});

async function passwordStep(url: string) {
  const pre = presessionOf(await fetch(`${url}/dashboard/sign-in`));
  const res = await fetch(`${url}/dashboard/sign-in`, form({ _csrf: pre, email: EMAIL, password: PASSWORD }, `pigeon_presession=${pre}`));
  return {
    res,
    pre,
    location: res.headers.get("location"),
    session: cookieOf(res, "pigeon_session"),
    pending: cookieOf(res, "pigeon_2fa"),
  };
}

/** Waits until Python's clock is in a fresh 30-second step, so one code is not reused. */
async function nextStep() {
  const now = Date.now();
  await Bun.sleep(30_000 - (now % 30_000) + 200);
}

describe("two-factor sign-in on the binary", () => {
  test("enrol with Python's code, sign in with the next one, reset with the CLI", async () => {
    const bin = isolatedBinary();
    const env = { PIGEON_DATA_DIR: tempDir() };
    expect((await runCommand(bin, ["users", "create", "--email", EMAIL, "--password", PASSWORD], env)).code).toBe(0);
    const server = await startServer(bin, env);
    try {
      const first = await passwordStep(server.url);
      expect(first.location).toBe("/dashboard");
      const cookie = `pigeon_session=${first.session}`;
      const page = await (await fetch(`${server.url}/dashboard/account/2fa`, { headers: { cookie } })).text();
      const secret = secretOnPage(page);
      const csrf = /name="_csrf" value="([0-9a-f]{32})"/.exec(page)![1];
      const confirmed = await fetch(`${server.url}/dashboard/account/2fa/confirm`, form({ _csrf: csrf, code: pythonTotp(secret) }, cookie));
      expect(confirmed.status).toBe(200);
      expect(await confirmed.text()).toContain("Your recovery codes");

      await nextStep();
      const step = await passwordStep(server.url);
      expect(step.location).toBe("/dashboard/sign-in/code");
      expect(step.session).toBeNull();
      const jar = `pigeon_presession=${step.pre}; pigeon_2fa=${step.pending}`;
      expect((await fetch(`${server.url}/dashboard`, { headers: { cookie: jar }, redirect: "manual" })).headers.get("location")).toBe(
        "/dashboard/sign-in",
      );
      const signed = await fetch(`${server.url}/dashboard/sign-in/code`, form({ _csrf: step.pre, code: pythonTotp(secret) }, jar));
      expect(signed.status).toBe(303);
      expect(signed.headers.get("location")).toBe("/dashboard");
      const session = cookieOf(signed, "pigeon_session");
      expect((await fetch(`${server.url}/dashboard`, { headers: { cookie: `pigeon_session=${session}` } })).status).toBe(200);
    } finally {
      await server.stop("SIGKILL");
    }

    const reset = await runCommand(bin, ["users", "reset-2fa", "--email", "Owner@Example.com"], env);
    expect({ code: reset.code, stderr: reset.stderr }).toEqual({ code: 0, stderr: "" });
    expect(reset.stdout).toContain(`Two-factor sign-in of ${EMAIL} removed`);
    const json = await runCommand(bin, ["users", "reset-2fa", "--email", EMAIL, "--json"], env);
    expect(JSON.parse(json.stdout)).toEqual({ email: EMAIL, two_factor_removed: false });
    const unknown = await runCommand(bin, ["users", "reset-2fa", "--email", "nobody@example.com"], env);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain("No user with the email nobody@example.com");
    const missing = await runCommand(bin, ["users", "reset-2fa"], env);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain("--email is required");

    const again = await startServer(bin, env);
    try {
      const plain = await passwordStep(again.url);
      expect(plain.location).toBe("/dashboard");
      expect(plain.session).not.toBeNull();
    } finally {
      await again.stop("SIGKILL");
    }
  }, 120_000);
});
