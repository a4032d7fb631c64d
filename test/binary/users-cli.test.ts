// `pigeon users …` on the compiled binary: create (password as a flag or on standard input),
// list, set-password, and the errors a typo earns. Dashboard sign-in then accepts the user.
import { describe, expect, test } from "bun:test";
import { isolatedBinary, runCommand, startServer, tempDir } from "../helpers/binary";

const bin = isolatedBinary();

/** Signs in through the dashboard's form the way a browser does; the answer's status and where it leads. */
async function signIn(url: string, email: string, password: string) {
  const first = await fetch(`${url}/dashboard/sign-in`);
  const pre = /pigeon_presession=([A-Za-z0-9]+)/.exec(first.headers.get("set-cookie") ?? "")![1];
  const res = await fetch(`${url}/dashboard/sign-in`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie: `pigeon_presession=${pre}`, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ _csrf: pre, email, password }).toString(),
  });
  return { status: res.status, location: res.headers.get("location"), cookie: res.headers.get("set-cookie") ?? "" };
}

describe("pigeon users", () => {
  const env = { PIGEON_DATA_DIR: tempDir() };

  test("create, list and sign in; the password may come on standard input", async () => {
    const made = await runCommand(
      bin,
      ["users", "create", "--email", "Owner@Example.com", "--password", "a long enough secret", "--json"],
      env,
    );
    expect(made.code).toBe(0);
    expect(JSON.parse(made.stdout)).toMatchObject({ email: "owner@example.com", role: "owner", account_id: 1 });

    const member = await runCommand(
      bin,
      ["users", "create", "--email", "clerk@example.com", "--role", "member", "--json"],
      env,
      "typed on stdin\n",
    );
    expect(member.code).toBe(0);
    expect(JSON.parse(member.stdout)).toMatchObject({ email: "clerk@example.com", role: "member" });

    const list = await runCommand(bin, ["users", "list", "--json"], env);
    expect(JSON.parse(list.stdout).map((u: { email: string }) => u.email)).toEqual(["owner@example.com", "clerk@example.com"]);

    const server = await startServer(bin, env);
    try {
      // A user exists, so no setup link is printed any more.
      expect(server.output()).not.toContain("/dashboard/setup");
      const ok = await signIn(server.url, "clerk@example.com", "typed on stdin");
      expect(ok).toMatchObject({ status: 303, location: "/dashboard" });
      expect(ok.cookie).toContain("pigeon_session=");
      expect((await signIn(server.url, "clerk@example.com", "typed on stdin\n")).status).toBe(401);
    } finally {
      await server.stop("SIGKILL");
    }
  });

  test("set-password changes the password and ends the user's sessions", async () => {
    const server = await startServer(bin, env);
    try {
      const before = await signIn(server.url, "owner@example.com", "a long enough secret");
      const session = /pigeon_session=([A-Za-z0-9]+)/.exec(before.cookie)![1];
      const page = await fetch(`${server.url}/dashboard`, { redirect: "manual", headers: { cookie: `pigeon_session=${session}` } });
      expect(page.status).toBe(200);

      const changed = await runCommand(
        bin,
        ["users", "set-password", "--email", "owner@example.com", "--password", "another long secret"],
        env,
      );
      expect(changed.code).toBe(0);
      const after = await fetch(`${server.url}/dashboard`, { redirect: "manual", headers: { cookie: `pigeon_session=${session}` } });
      expect(after.status).toBe(303);
      expect((await signIn(server.url, "owner@example.com", "a long enough secret")).status).toBe(401);
      expect((await signIn(server.url, "owner@example.com", "another long secret")).status).toBe(303);
    } finally {
      await server.stop("SIGKILL");
    }
  });

  test("mistakes get one clear line and a non-zero exit, and nothing is stored", async () => {
    const cases: [string[], number, RegExp][] = [
      [["users", "create", "--email", "owner@example.com", "--password", "a long enough secret"], 1, /already exists/],
      [["users", "create", "--email", "not-an-address", "--password", "a long enough secret"], 1, /email address/],
      [["users", "create", "--email", "short@example.com", "--password", "short"], 1, /at least 10 characters/],
      [["users", "create", "--email", "x@example.com", "--password", "a long enough secret", "--role", "admin"], 2, /owner or member/],
      [["users", "create", "--email", "x@example.com", "--password", "a long enough secret", "--account", "99"], 1, /account 99 not found/],
      [["users", "set-password", "--email", "nobody@example.com", "--password", "a long enough secret"], 1, /No user/],
      [["users", "rename"], 2, /create, set-password, list or reset-2fa/],
    ];
    for (const [args, code, message] of cases) {
      const run = await runCommand(bin, args, env);
      expect({ args, code: run.code }).toEqual({ args, code });
      expect(run.stderr).toMatch(message);
    }
    const list = await runCommand(bin, ["users", "list", "--json"], env);
    expect(JSON.parse(list.stdout)).toHaveLength(2);
  });
});
