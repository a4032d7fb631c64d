// SIGKILL the compiled binary while a mail client sends through its SMTP listener, restart it, and
// send every mail again as a sending server would retry: each mail answered 250 before the kill is
// stored, before any retry; after the retry every mail is stored exactly once and the provider got
// each message once. The client is Python's smtplib. On SQLite and on PostgreSQL.
import { afterAll, describe, expect, test } from "bun:test";
import type { Credentials, RunningServer } from "../helpers/binary";
import { settle } from "../helpers/api";
import { crashRig, json, waitSettled } from "../helpers/crash-setup";
import { startFakeCloud } from "../helpers/fake-cloud";
import { postgresBin, postgresCluster } from "../helpers/postgres";
import { mailText, smtplibBatch } from "../helpers/smtp-judge";

const fake = await startFakeCloud({ latencyMs: 20 });
let server: RunningServer | null = null;

afterAll(async () => {
  await server?.stop("SIGKILL");
  fake.stop();
});

const smtpPort = (s: RunningServer) => Number(/smtp on [^:\s]+:(\d+)/.exec(s.output())?.[1]);

/** Every stored message's text, with how many times it is stored. */
async function storedTexts(s: RunningServer, key: Credentials): Promise<Map<string, number>> {
  const texts = new Map<string, number>();
  for (let page = 1; ; page++) {
    const list = (await json(await s.fetch(`/v1/api/notification/list?limit=100&page=${page}`, { key }))).data;
    for (const n of list.notifications as { message: string }[]) texts.set(n.message, (texts.get(n.message) ?? 0) + 1);
    if (list.notifications.length < 100) break;
  }
  return texts;
}

async function killWhileMailing(extraEnv: Record<string, string>) {
  const before = fake.creates.length;
  const setup = await crashRig(fake, { PIGEON_SMTP_PORT: "0", PIGEON_SMTP_PLAIN_LOOPBACK: "1", ...extraEnv });
  const { rig } = setup;
  server = setup.server;
  const tag = Math.random().toString(36).slice(2, 8);
  const mails = Array.from({ length: 120 }, (_, i) => ({
    to: `+1415555${String(2000 + i)}@sms.example`,
    message: mailText({
      from: "panel@alarm.example",
      to: "x@sms.example",
      subject: "alarm",
      body: `zone ${i} open ${tag}`,
      messageId: `<zone-${i}-${tag}@alarm.example>`,
    }),
  }));
  const plan = { user: rig.key.api_key, password: rig.key.api_secret, from: "panel@alarm.example", mails };

  const first = smtplibBatch({ ...plan, port: smtpPort(server) });
  expect(await settle(() => first.outcomes.length >= 40, 60_000, 5)).toBe(true);
  server.proc.kill("SIGKILL");
  await server.proc.exited;
  const answered = (await first.done).filter((o) => o.code === 250).map((o) => o.i);
  expect(answered.length).toBeGreaterThanOrEqual(40);
  expect(answered.length).toBeLessThan(mails.length);

  // What was answered 250 is stored, before any retry.
  server = await rig.start();
  const afterKill = await storedTexts(server, rig.key);
  for (const i of answered) expect(afterKill.get(`zone ${i} open ${tag}`)).toBe(1);

  // The sending server retries every mail (it cannot tell which 250 it missed).
  const retry = await smtplibBatch({ ...plan, port: smtpPort(server) }).done;
  expect(retry.length).toBe(mails.length);
  expect(retry.every((o) => o.code === 250)).toBe(true);

  expect(await waitSettled(server, rig.key, 60_000)).toBe(0);
  const stored = await storedTexts(server, rig.key);
  expect(stored.size).toBe(mails.length);
  expect([...stored.values()].every((n) => n === 1)).toBe(true);
  const byBody = new Map<string, number>();
  for (const create of fake.creates.slice(before)) byBody.set(create.Body, (byBody.get(create.Body) ?? 0) + 1);
  expect(byBody.size).toBe(mails.length);
  expect([...byBody.values()].every((n) => n === 1)).toBe(true);
  await server.stop("SIGTERM");
  server = null;
}

const TITLE = "a SIGKILL while mail is sent loses no mail answered 250, and the retry sends nothing twice";

describe("on SQLite", () => {
  test(TITLE, () => killWhileMailing({}), 240_000);
});

describe.skipIf(!postgresBin())("on PostgreSQL", () => {
  test(TITLE, async () => {
    const pg = await postgresCluster();
    await killWhileMailing({ PIGEON_DATABASE_URL: await pg.createDatabase("smtp_crash") });
  }, 240_000);
});
