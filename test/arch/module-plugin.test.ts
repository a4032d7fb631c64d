// A throwaway module, added through the steps of docs/dev/architecture.md's "Adding a module" and
// nothing else: one descriptor given to the composition root beside the real ones. Its route is
// mounted (and documented), its task runs with the worker's, it hears the notifications'
// lifecycle after the modules LISTENING names, the worker recovers and stops it, and `pigeon
// serve`'s listener start runs its own network listener.
import { afterAll, describe, expect, test } from "bun:test";
import { Elysia, t } from "elysia";
import { connect } from "node:net";
import { startModuleListeners } from "../../src/cli/serve";
import { declaredAuth, declaredKindsOf } from "../../src/http/declared-auth";
import { ok } from "../../src/http/envelope";
import { LISTENING, MODULES } from "../../src/modules";
import type { NetworkListener } from "../../src/modules/descriptor";
import type { ModuleDescriptor } from "../../src/services-type";
import { startWorker, workerTasks } from "../../src/worker";
import { createTestContext } from "../helpers/context";
import { RECIPIENT } from "../helpers/numbers";

/** What the throwaway saw, for the assertions. */
const seen = {
  sweeps: 0,
  recovered: 0,
  stopped: 0,
  /** Each change heard, with whether the outbox already held its event when the module heard it. */
  heard: [] as { id: number; to: string; eventFirst: boolean }[],
  accepted: [] as number[],
};
const servers: { stop(): void }[] = [];
afterAll(() => {
  for (const s of servers) s.stop();
});

/** Step 1 of the guide: one descriptor. Its "service" is a greeting; its listener a TCP echo of it. */
const throwaway: ModuleDescriptor = {
  name: "throwaway",
  routes: () => ({
    api: [
      new Elysia().use(declaredAuth()).get("/v1/api/throwaway/greeting", () => ok({ greeting: "hello" }, "Greeting"), {
        auth: "apiKey",
        response: t.Object({ data: t.Object({ greeting: t.String() }) }, { additionalProperties: true }),
        detail: { operationId: "getThrowawayGreeting", summary: "A throwaway module's greeting" },
      }),
    ],
  }),
  tasks: () => [
    {
      name: "throwaway:sweep",
      everySeconds: 60,
      run: () => {
        seen.sweeps += 1;
      },
    },
  ],
  listeners: (s) => ({
    transition: async (before, to) => {
      const events = await s.storage.all<{ type: string }>("SELECT type FROM event WHERE workspace_id = ?", [before.workspaceId]);
      seen.heard.push({ id: before.id, to, eventFirst: events.some((e) => e.type === `notification.${to}`) });
    },
    accepted: (accepted) => void seen.accepted.push(...accepted.map((a) => a.notificationId)),
  }),
  recover: async () => {
    seen.recovered += 1;
    return null;
  },
  stop: () => {
    seen.stopped += 1;
  },
  listen: async (): Promise<NetworkListener> => {
    const server = Bun.listen({
      hostname: "127.0.0.1",
      port: 0,
      socket: {
        data() {},
        open(socket) {
          socket.end("hello\n");
        },
      },
    });
    servers.push(server);
    return {
      describe: () => `the throwaway greeting on 127.0.0.1:${server.port}`,
      stop: async () => server.stop(true),
    };
  },
};

// Step 2 of the guide: the module joins the list (here the test's own copy of it).
const build = (extra: ModuleDescriptor[] = []) => createTestContext({ modules: [...MODULES, throwaway, ...extra] });

describe("a module added through the guide's steps", () => {
  test("its route is mounted with its declared auth and documented under its id", async () => {
    const ctx = await build();
    const route = ctx.app.routes.find((r) => r.path === "/v1/api/throwaway/greeting");
    expect(route && declaredKindsOf(route as never)).toEqual(["apiKey"]);
    expect((await ctx.get("/v1/api/throwaway/greeting", { key: null })).status).toBe(401);
    const greeted = await ctx.get("/v1/api/throwaway/greeting");
    expect(greeted.status).toBe(200);
    expect(greeted.body.data.greeting).toBe("hello");
    const spec = (await ctx.get("/openapi.json", { key: null })).body;
    expect(spec.paths["/v1/api/throwaway/greeting"]?.get?.operationId).toBe("getThrowawayGreeting");
  });

  test("it hears a send's lifecycle after the modules LISTENING names, and its task runs with the worker's", async () => {
    expect(LISTENING).not.toContain("throwaway");
    const ctx = await build();
    const { services } = ctx;
    const device = await ctx.phone();
    const sent = await ctx.post("/v1/notification/sms/api/send", {
      recipient_contact: RECIPIENT,
      message: "Heard by the throwaway",
      device_id: device.device_id,
    });
    expect(sent.status).toBe(200);
    const id = sent.body.data.notification_id;
    expect(seen.accepted).toEqual([id]);
    await services.notifications.cancel(ctx.workspace.id, id);
    // Heard once, after the notifications module had written the change's event to the outbox.
    expect(seen.heard).toEqual([{ id, to: "cancelled", eventFirst: true }]);

    const task = workerTasks(services).find((task) => task.name === "throwaway:sweep");
    expect(task).toBeDefined();
    task!.run();
    expect(seen.sweeps).toBe(1);
  });

  test("the worker recovers it at start and stops it at shutdown", async () => {
    const { services } = await build();
    const before = { recovered: seen.recovered, stopped: seen.stopped };
    const worker = await startWorker(services);
    expect(seen.recovered).toBe(before.recovered + 1);
    expect(seen.stopped).toBe(before.stopped);
    expect(await worker.stop(1000)).toBe(true);
    expect(seen.stopped).toBe(before.stopped + 1);
  });

  test("serve's listener start runs its network listener, and a failing one is named", async () => {
    const { app, services } = await build();
    const [listener] = await startModuleListeners(services, app);
    const port = Number(/:(\d+)$/.exec(listener.describe())?.[1]);
    const greeting = await new Promise<string>((resolve, reject) => {
      let got = "";
      const socket = connect(port, "127.0.0.1");
      socket.on("data", (chunk) => (got += chunk));
      socket.on("end", () => resolve(got));
      socket.on("error", reject);
    });
    expect(greeting).toBe("hello\n");
    await listener.stop(0);

    const broken: ModuleDescriptor = {
      name: "broken",
      listen: async () => {
        throw new Error("port 25 is in use");
      },
    };
    const withBroken = await build([broken]);
    await expect(startModuleListeners(withBroken.services, withBroken.app)).rejects.toThrow("broken: port 25 is in use");
  });
});
