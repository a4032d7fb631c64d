// A throwaway channel, registered through the steps of the README's "Add a channel" guide and
// nothing else: one Channel object (kind, delivery type, adapter, report mapping, routes, tasks)
// given to the composition root beside the real ones. A send through it is dispatched by the
// worker, its report comes back through its own route, and its task runs with the others.
import { describe, expect, test } from "bun:test";
import { Elysia, t } from "elysia";
import { createApp } from "../../src/app";
import { CHANNELS } from "../../src/channels";
import type { DeviceKind } from "../../src/core/kinds";
import type { Channel, ChannelAdapter } from "../../src/channels/types";
import { ManualClock } from "../../src/clock";
import { openDatabase } from "../../src/db/client";
import { migrate } from "../../src/db/migrate";
import { declaredAuth, declaredKindsOf } from "../../src/http/declared-auth";
import { ok } from "../../src/http/envelope";
import type { NotificationRecord } from "../../src/modules/notifications/state";
import { applyReport } from "../../src/modules/notifications/reports";
import { createServices } from "../../src/services";
import { workerTasks } from "../../src/worker";
import { testConfig } from "../helpers/context";
import { RECIPIENT } from "../helpers/numbers";

// Step 2 of the guide adds the kind to DEVICE_KINDS; a test cannot widen that type, so it says so.
const KIND = "pigeon-test" as DeviceKind;

/** The throwaway's own service: its report mapping, for its route. */
interface ThrowawayService {
  report(deviceId: number, externalId: string, outcome: string): Promise<boolean>;
}

/** The guide's step 1: one Channel object. Its "provider" is an in-memory list. */
function throwawayChannel() {
  const handed: { id: string; to: string; text: string }[] = [];
  let sweeps = 0;
  const channel: Channel<"throwaway", ThrowawayService> = {
    name: "throwaway",
    kind: KIND,
    deliveryType: "sms",
    dispatched: true,
    defaultSendLimit: 60,
    create(core) {
      const adapter: ChannelAdapter = {
        async send(n: NotificationRecord) {
          const id = `tw-${handed.length + 1}`;
          handed.push({ id, to: n.recipient, text: n.message });
          return { kind: "accepted", externalId: id, detail: `throwaway took it as ${id}` };
        },
      };
      // Its report mapping: the wire format ("ok"/"bounced") to a Report, then applyReport.
      const service: ThrowawayService = {
        async report(deviceId, externalId, outcome) {
          const n = await core.notifications.byExternalId(externalId, deviceId);
          if (!n) return false;
          if (outcome === "ok") return applyReport(core.state, n.id, { status: "delivered", detail: "throwaway: ok" });
          return applyReport(core.state, n.id, {
            status: "failed",
            errorCode: "bounced",
            reason: "the throwaway bounced it",
            detail: "throwaway: bounced",
          });
        },
      };
      return { service, adapter };
    },
    routes: (service, _s) => [
      new Elysia()
        .use(declaredAuth())
        .post(
          "/v1/callbacks/throwaway/:device_id",
          async ({ params, body }) => ok({ handled: await service.report(Number(params.device_id), body.id, body.outcome) }, "Recorded"),
          { body: t.Object({ id: t.String(), outcome: t.String() }), auth: "platform", detail: {} },
        ),
    ],
    tasks: () => [{ name: "throwaway:sweep", everySeconds: 60, run: () => (sweeps += 1) }],
  };
  return { channel, handed, sweepsRan: () => sweeps };
}

describe("a channel registered through the guide's steps", () => {
  test("carries a send to sent, takes its delivery report, and runs its task", async () => {
    const { channel, handed, sweepsRan } = throwawayChannel();
    const db = openDatabase(":memory:");
    migrate(db);
    const clock = new ManualClock();
    // The guide's step 3: the channel joins the list (here the test's own copy of it).
    const services = createServices({ db, config: testConfig(), clock, channels: [...CHANNELS, channel], log: () => {} });
    await services.accounts.seed();
    const boot = (await services.accounts.bootstrap())!;
    const key = await services.accounts.createKey("test key", boot.workspace.id);
    const app = createApp(services);
    // Its callback route declares who may call it, as every route must.
    const callback = app.routes.find((r) => r.path === "/v1/callbacks/throwaway/:device_id");
    expect(callback && declaredKindsOf(callback as never)).toEqual(["platform"]);

    // A device of the new kind (the register API validates kinds against DEVICE_KINDS: see KIND).
    const [device] = await services.storage.transaction(() =>
      services.channelCore.devices.insertMany([
        {
          workspaceId: boot.workspace.id,
          name: "throwaway line",
          kind: KIND,
          status: "active",
          externalId: "tw-device",
          phoneNumber: null,
          config: null,
          sendLimitPerMinute: channel.defaultSendLimit,
          createdAt: clock.now(),
          updatedAt: clock.now(),
        },
      ]),
    );

    const call = (path: string, body: unknown, auth = true) =>
      app.handle(
        new Request(`http://localhost${path}`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            ...(auth ? { authorization: `Bearer ${key.api_key}`, "x-api-secret": key.api_secret } : {}),
          },
          body: JSON.stringify(body),
        }),
      );

    const sent = await call("/v1/notification/sms/api/send", {
      recipient_contact: RECIPIENT,
      message: "Through the throwaway",
      device_id: device.id,
    });
    expect(sent.status).toBe(200);
    const id = ((await sent.json()) as { data: { notification_id: number } }).data.notification_id;
    expect(await services.state.get(id)).toMatchObject({ status: "pending", route: KIND, cost: 0 });

    expect(await services.dispatcher.dispatchDue()).toBe(1);
    expect(handed).toEqual([{ id: "tw-1", to: RECIPIENT, text: "Through the throwaway" }]);
    expect(await services.state.get(id)).toMatchObject({ status: "sent", externalId: "tw-1" });

    const reported = await call(`/v1/callbacks/throwaway/${device.id}`, { id: "tw-1", outcome: "ok" }, false);
    expect(reported.status).toBe(200);
    expect(await services.state.get(id)).toMatchObject({ status: "delivered" });
    const record = (await services.state.get(id))!;
    expect((await services.notifications.logs(record)).map((l) => l.event)).toEqual(["accepted", "attempt", "sent", "delivered"]);

    const task = workerTasks(services).find((t) => t.name === "throwaway:sweep");
    expect(task).toBeDefined();
    task!.run();
    expect(sweepsRan()).toBe(1);
  });
});
