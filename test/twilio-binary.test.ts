// Twilio's Messages API on the compiled binary, judged by the real `twilio` package: the account
// SID and token from `pigeon twilio credentials --json`, a message sent and read back, and a
// rotated token that takes over from the old one at once.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import twilio from "twilio";
import { runCommand, type RunningServer } from "./helpers/binary";
import { crashRig, type CrashRig } from "./helpers/crash-setup";

let rig: CrashRig;
let server: RunningServer;

beforeAll(async () => {
  ({ rig, server } = await crashRig(null));
  const pairing = (await server.api("/v1/api/device/pairing", rig.key)).body.data;
  const reg = await fetch(`${pairing.server_url}/device`, {
    method: "POST",
    headers: { authorization: `Bearer ${pairing.pairing_token}`, "content-type": "application/json" },
    body: JSON.stringify({ name: "Shop phone" }),
  });
  expect(reg.status).toBe(201);
}, 60_000);
afterAll(async () => {
  await server?.stop("SIGKILL");
});

async function credentials(...extra: string[]) {
  const r = await runCommand(rig.bin, ["twilio", "credentials", "--json", ...extra], rig.env);
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout) as { account_sid: string; auth_token: string };
}
function client(sid: string, token: string) {
  const c = twilio(sid, token);
  c.api.baseUrl = server.url;
  return c;
}

describe("Twilio's Messages API on the binary", () => {
  test("credentials from the command line send and read a message; a rotated token replaces the old one", async () => {
    const first = await credentials();
    expect(first.account_sid).toMatch(/^AC[0-9a-f]{32}$/);
    expect(await credentials()).toEqual(first);
    const c = client(first.account_sid, first.auth_token);
    const sent = await c.messages.create({ to: "+14155552671", body: "Hello from a Twilio client" });
    expect(sent).toMatchObject({ status: "queued", to: "+14155552671", body: "Hello from a Twilio client" });
    expect((await c.messages(sent.sid).fetch()).sid).toBe(sent.sid);

    const rotated = await credentials("--rotate");
    expect(rotated.account_sid).toBe(first.account_sid);
    expect(rotated.auth_token).not.toBe(first.auth_token);
    const old = await c
      .messages(sent.sid)
      .fetch()
      .catch((e: { status: number; code: number }) => e);
    expect(old).toMatchObject({ status: 401, code: 20003 });
    expect((await client(rotated.account_sid, rotated.auth_token).messages(sent.sid).fetch()).body).toBe("Hello from a Twilio client");
  });
});
