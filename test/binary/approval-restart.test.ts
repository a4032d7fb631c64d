// Approval on the compiled binary, across SIGKILLs: a key made by `pigeon keys create
// --needs-approval` sends two messages through a cloud number (on the local fake provider), which
// wait, their credits held; killed and started again, both still wait and neither reached the
// provider; one is approved and the provider takes it once; killed again and started with a short
// approval time to live, the other fails approval_expired, is refunded, and is never sent. On
// SQLite and on PostgreSQL.
import { afterAll, describe, expect, test } from "bun:test";
import { waitFor } from "../helpers/api";
import { runCommand, type Credentials, type RunningServer } from "../helpers/binary";
import { crashRig, json } from "../helpers/crash-setup";
import { startFakeCloud, type FakeCloud } from "../helpers/fake-cloud";
import { RECIPIENT } from "../helpers/numbers";
import { postgresBin, postgresCluster } from "../helpers/postgres";

let server: RunningServer | null = null;
let fake: FakeCloud | null = null;

afterAll(async () => {
  await server?.stop("SIGKILL");
  fake?.stop();
});

const providerTook = (text: string) => fake!.creates.filter((c) => c.Body === text).length;

async function approvalAcrossRestarts(database: Record<string, string>) {
  fake?.stop();
  fake = await startFakeCloud();
  const setup = await crashRig(fake, { PIGEON_WORKER_INTERVAL: "1", ...database });
  const { rig } = setup;
  const owner = rig.key;
  server = setup.server;
  const made = await runCommand(rig.bin, ["keys", "create", "--name", "assistant", "--needs-approval", "--json"], rig.env);
  expect(made.code).toBe(0);
  const agent = JSON.parse(made.stdout) as Credentials & { needs_approval: boolean };
  expect(agent.needs_approval).toBe(true);

  const balance = async () => (await server!.api("/v1/api/stats/credits", owner)).body.data.balance as number;
  const before = await balance();

  const send = async (message: string) => {
    const r = await server!.fetch("/v1/api/sms/send", {
      method: "POST",
      key: agent,
      headers: { "x-pigeon-agent-session": "desk-agent-1" },
      body: JSON.stringify({ recipient_contact: RECIPIENT, message, reason: "the customer asked" }),
    });
    expect(r.status).toBe(200);
    const data = (await json(r)).data;
    expect(data.status).toBe("awaiting_approval");
    return data.notification_id as number;
  };
  const approved = await send("approve me after a restart");
  const expiring = await send("let me expire after a restart");
  // Each waiting send holds its cost (a segment on a cloud number).
  const costOf = async (id: number) => (await server!.api(`/v1/api/notification/${id}`, owner)).body.data.cost as number;
  expect(await costOf(expiring)).toBeGreaterThan(0);
  expect(await balance()).toBe(before - (await costOf(approved)) - (await costOf(expiring)));
  // The worker runs every second: two rounds later, nothing has gone to the provider.
  await Bun.sleep(2_500);
  expect(fake.creates).toHaveLength(0);

  server.proc.kill("SIGKILL");
  await server.proc.exited;
  server = await rig.start();
  const waiting = (await server.api("/v1/api/approval/list", owner)).body.data;
  expect(waiting.notifications.map((n: { notification_id: number }) => n.notification_id).sort()).toEqual([approved, expiring].sort());
  expect(waiting.notifications[0]).toMatchObject({
    key_name: "assistant",
    agent_session: "desk-agent-1",
    approval_reason: "the customer asked",
  });
  expect((await server.api("/v1/api/approval/approve", owner, { ids: [approved] })).body.data).toEqual({
    decided: [approved],
    skipped: [],
  });
  await waitFor("the approved message to be sent", async () => {
    const n = (await server!.api(`/v1/api/notification/${approved}`, owner)).body.data;
    return n.status === "sent" || n.status === "delivered";
  });

  server.proc.kill("SIGKILL");
  await server.proc.exited;
  // Started again with a one-second time to live, the message still waiting is past it.
  rig.env.PIGEON_APPROVAL_TTL_SECONDS = "1";
  server = await rig.start();
  await waitFor("the waiting message to expire", async () => {
    const n = (await server!.api(`/v1/api/notification/${expiring}`, owner)).body.data;
    return n.status === "failed";
  });
  const expired = (await server.api(`/v1/api/notification/${expiring}`, owner)).body.data;
  expect(expired).toMatchObject({ status: "failed", error_code: "approval_expired", approved_at: null });
  expect(await balance()).toBe(before - (await costOf(approved)));
  expect((await server.api("/v1/api/approval/list", owner)).body.data.pagination.total).toBe(0);
  await Bun.sleep(1_500);
  expect(providerTook("approve me after a restart")).toBe(1);
  expect(providerTook("let me expire after a restart")).toBe(0);
  await server.stop("SIGKILL");
  server = null;
}

const TITLE = "what awaits approval survives a SIGKILL; approved it is sent once; past its time to live it fails, refunded";

describe("on SQLite", () => {
  test(TITLE, () => approvalAcrossRestarts({}), 90_000);
});

describe.skipIf(!postgresBin())("on PostgreSQL", () => {
  test(TITLE, async () => {
    const pg = await postgresCluster();
    await approvalAcrossRestarts({ PIGEON_DATABASE_URL: await pg.createDatabase("approval_restart") });
  }, 90_000);
});
