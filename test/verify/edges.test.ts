// Verify at its edges, judged by the real `twilio` package: starts made at once (a double click, a
// script hammering one number) cannot send past the number's limit nor send two different codes,
// checks made at once get five answers at most, and an invalid To is Twilio's Verify 60200. Both
// back ends.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { TestContext } from "../helpers/context";
import { startTwilioRig, type TwilioRig } from "../helpers/twilio-rig";

let rig: TwilioRig;
let ctx: TestContext;

const client = () => rig.client().verify.v2;
/** The texts of the messages to `to`, in order. */
const textsTo = async (to: string) =>
  (await ctx.sql.all<{ message: string }>("SELECT message FROM notification WHERE recipient = ? ORDER BY id", [to])).map((r) => r.message);
const codeIn = (text: string) => /(\d{4,10})$/.exec(text)?.[1] ?? "";

beforeAll(async () => {
  rig = await startTwilioRig();
  ({ ctx } = rig);
});
afterAll(() => {
  rig?.stop();
});

describe("Verify under parallel calls", () => {
  test("starts made at once to one number: one verification, one code, the number's limit held", async () => {
    const v2 = client();
    const service = await v2.services.create({ friendlyName: "Hammered" });
    const to = "+14155550131";
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        v2
          .services(service.sid)
          .verifications.create({ to, channel: "sms" })
          .then((v) => v.sid)
          .catch((e: { code: number }) => `refused ${e.code}`),
      ),
    );
    const made = answers.filter((a) => a.startsWith("VE"));
    expect(new Set(made).size).toBe(1);
    for (const a of answers) if (!a.startsWith("VE")) expect(a).toBe("refused 60203");
    const texts = await textsTo(to);
    // At most five codes to the number in 10 minutes, all of them the same code.
    expect(texts.length).toBeGreaterThanOrEqual(1);
    expect(texts.length).toBeLessThanOrEqual(5);
    expect(new Set(texts.map(codeIn)).size).toBe(1);
  });

  test("checks made at once: five answers at most, then 60202", async () => {
    const v2 = client();
    const service = await v2.services.create({ friendlyName: "Guessed" });
    const to = "+14155550132";
    const v = await v2.services(service.sid).verifications.create({ to, channel: "sms" });
    const code = codeIn((await textsTo(to)).at(-1)!);
    const wrong = code === "000000" ? "111111" : "000000";
    const answers = await Promise.all(
      Array.from({ length: 12 }, () =>
        v2
          .services(service.sid)
          .verificationChecks.create({ verificationSid: v.sid, code: wrong })
          .then((c) => c.status)
          .catch((e: { code: number }) => String(e.code)),
      ),
    );
    expect(answers.filter((a) => a === "pending")).toHaveLength(5);
    expect(answers.filter((a) => a === "60202")).toHaveLength(7);
  });

  test("an invalid To is Verify's 60200 (Invalid parameter: To), not the Messages API's 21211", async () => {
    const v2 = client();
    const service = await v2.services.create({ friendlyName: "Strict" });
    const refused = await v2
      .services(service.sid)
      .verifications.create({ to: "12", channel: "sms" })
      .then(() => null)
      .catch((e: { status: number; code: number }) => ({ status: e.status, code: e.code }));
    expect(refused).toEqual({ status: 400, code: 60200 });
    const check = await v2
      .services(service.sid)
      .verificationChecks.create({ to: "not a number", code: "123456" })
      .then(() => null)
      .catch((e: { status: number; code: number }) => ({ status: e.status, code: e.code }));
    expect(check).toEqual({ status: 400, code: 60200 });
  });
});
