// The paired phone as one Channel: devices of kind `sms`, an Android phone running the SMS gateway
// app. Nothing is dispatched to it: it downloads its messages over the app's API, told by its event
// stream when there is work, and reports back what the carrier did.
import type { Channel } from "../types";
import { createPhoneEventHub, KEEPALIVE_MS, type PhoneEvent, type PhoneEventHub } from "./events";
import { phoneInboxRoutes } from "./inbox-routes";
import { pairingRoutes } from "./pairing-routes";
import { reassignRoutes } from "./reassign-routes";
import { isCancelAware } from "./protocol";
import { createPhoneRepository } from "./repository";
import { phoneApiRoutes } from "./routes";
import { createPhoneService, type PhoneService } from "./service";
import { PHONE_KIND } from "../../core/kinds";

export const phone: Channel<"phone", PhoneService> = {
  name: "phone",
  kind: PHONE_KIND,
  deliveryType: "sms",
  needsPresence: true,
  sendsDataSms: true,
  choosesExternalId: true,
  issuesToken: true,
  defaultSendLimit: 20,
  create(core) {
    const { storage, clock, devices } = core;
    const repo = createPhoneRepository(storage, core.notifications);
    // Paired phones: their event streams keep them marked as seen.
    const keepaliveMs = Math.min(KEEPALIVE_MS, Math.floor((core.config.offlineAfterSeconds * 1000) / 3));
    // With several servers, which one holds a phone's stream is noted in the database (renewed by
    // its keepalives), so a request through another server knows the phone can be reached.
    const shared = core.shared;
    const noteStream = (deviceId: number, open: boolean) => {
      if (!shared) return;
      const noted = open
        ? repo.streamOpen(deviceId, core.serverId, clock.now() + 2 * keepaliveMs)
        : repo.streamClosed(deviceId, core.serverId);
      noted.catch(() => {});
    };
    const local = createPhoneEventHub(
      (deviceId) => {
        // A keepalive that cannot be recorded (the database closing) is retried by the next one.
        devices.touch(deviceId, clock.now()).catch(() => {});
        noteStream(deviceId, true);
      },
      keepaliveMs,
      noteStream,
    );
    // With several servers, a phone's stream may be open on another one: what is meant for a phone
    // this server does not hold goes to the others as a signal, and the one holding it acts.
    const hub: PhoneEventHub = {
      ...local,
      notify(deviceId, event, data = null) {
        local.notify(deviceId, event, data);
        if (!local.isOpen(deviceId)) core.signals.publish("phone", { device: deviceId, event, data });
      },
      enqueued(deviceId, stillWanted) {
        local.enqueued(deviceId, stillWanted);
        if (!local.isOpen(deviceId)) core.signals.publish("phone", { device: deviceId, event: "enqueued" });
      },
    };
    core.signals.subscribe("phone", (message) => {
      const deviceId = Number(message.device);
      if (!local.isOpen(deviceId)) return;
      if (message.event === "enqueued") local.enqueued(deviceId, () => service.wantsWork(deviceId));
      else local.notify(deviceId, message.event as PhoneEvent, (message.data as Record<string, string> | null) ?? null);
    });
    const service = createPhoneService({
      storage,
      repo,
      clock,
      devices,
      state: core.state,
      threads: core.threads,
      hub,
      events: core.events,
      onInbound: core.onInbound,
      rehomeTarget: core.rehomeTarget,
      secrets: core.secrets,
      log: core.log,
      streamElsewhere: shared ? (deviceId: number) => repo.streamOpenAnywhere(deviceId, clock.now()) : async () => false,
      offlineAfterMs: core.config.offlineAfterSeconds * 1000,
      offlineTtlMs: core.config.offlineTtlSeconds * 1000,
    });
    return {
      service,
      settingsChanged: (device) => hub.notify(device.id, "SettingsUpdated"),
      // A message the phone downloaded and has not taken up: an app that knows the event can drop
      // it, so its cancel waits for the phone's answer.
      async asksDevice(n) {
        return n.deviceId !== null && !!n.externalId && n.dispatchedAt !== null && isCancelAware(await repo.appVersion(n.deviceId));
      },
      // Only apps that know the event get it; older ones log it as unknown (they never drop the
      // message anyway). The version is the one the phone gave on its API calls: its event stream
      // comes from a different HTTP client whose User-Agent names no app version.
      async cancelled(n) {
        if (n.deviceId === null || !n.externalId || n.dispatchedAt === null) return;
        if (isCancelAware(await repo.appVersion(n.deviceId))) hub.notify(n.deviceId, "MessageCancelled", { messageId: n.externalId });
      },
      // Immediate messages: tell the phone now (scheduled ones are announced when due).
      accepted(accepted) {
        for (const a of accepted) if (a.prepared.scheduleAt === null) service.announce(a.prepared.device.id);
      },
      // Approved messages that are due now: tell the phone (scheduled ones are announced when due).
      approved(approved) {
        const now = clock.now();
        for (const n of approved) if (n.deviceId !== null && (n.scheduleAt === null || n.scheduleAt <= now)) service.announce(n.deviceId);
      },
      beforeBody: (method, path, headers, signIn) => service.checkBeforeBody(method, path, headers, signIn),
      close: () => hub.closeAll(),
    };
  },
  // Pairing lives under the workspace API, the phone's own API under /mobile/v1.
  routes: (service, s) => [pairingRoutes(s), phoneInboxRoutes(service, s), reassignRoutes(service), phoneApiRoutes(service, s)],
  tasks: (service, config) => [
    // On the leader: phones whose stream is open on another server are told through it (signals).
    { name: "phone:announce-due", everySeconds: config.workerIntervalSeconds, run: () => service.announceDue() },
    // Every tick, like the other queue work: a shortened offline threshold (tests) is seen promptly.
    { name: "phone:watch-presence", everySeconds: Math.min(15, config.workerIntervalSeconds), run: () => service.watchPresence() },
    { name: "phone:rehome", everySeconds: config.workerIntervalSeconds, run: () => service.rehomeOffline() },
  ],
};
