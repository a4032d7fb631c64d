// The recovery check must walk every page of the provider's message list. A
// call cut off by SIGKILL is checked after restart; if more than a page of newer messages to the
// same number went out meanwhile, reading only the first page misses it and sends it again.
import { afterAll, expect, test } from "bun:test";
import type { RunningServer } from "../helpers/binary";
import { settle } from "../helpers/api";
import { crashRig, json, sendBulk, TO, waitSettled } from "../helpers/crash-setup";
import { startFakeCloud } from "../helpers/fake-cloud";

const fake = await startFakeCloud();
let server: RunningServer | null = null;

afterAll(async () => {
  await server?.stop("SIGKILL");
  fake.stop();
});

test("a call cut off behind 60 newer messages to the same number is found on a later page, not sent again", async () => {
  const setup = await crashRig(fake);
  server = setup.server;
  const { rig } = setup;
  // The provider takes `first` at once but answers only after 8 s; the fillers go straight through.
  fake.holdBody("first", 8_000);
  const bodies = ["first", ...Array.from({ length: 60 }, (_, i) => `filler ${i}`)];
  const ids = await sendBulk(server, rig.key, bodies);

  const started = Date.now();
  await settle(() => fake.messages.size >= 61, 15_000, 50);
  expect(fake.messages.size).toBe(61);
  await Bun.sleep(Math.max(0, 2_500 - (Date.now() - started)));
  server.proc.kill("SIGKILL");
  await server.proc.exited;

  server = await rig.start();
  expect(await waitSettled(server, rig.key, 20_000)).toBe(0);

  const first = await json(await server.fetch(`/v1/api/notification/${ids[0]}`, { key: rig.key }));
  expect(first.data.status).toBe("sent");
  expect(first.data.logs.map((l: { event: string }) => l.event)).toContain("interrupted");
  const bodiesAtProvider = [...fake.messages.values()].map((m) => m.body);
  for (const body of bodies) expect(bodiesAtProvider.filter((b) => b === body)).toHaveLength(1);
  expect(bodiesAtProvider).toHaveLength(61);
  // The provider's list was read past its first page (PageToken), and never from another host.
  expect(fake.lists.some((q) => q.get("PageToken")?.startsWith("PA"))).toBe(true);
  expect(fake.lists.every((q) => q.get("To") === TO)).toBe(true);
  expect(first.data.provider_message_id).toBe([...fake.messages.values()].find((m) => m.body === "first")!.sid);
}, 60_000);
