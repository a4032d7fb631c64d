// The SMPP module: Pigeon as an SMSC (docs/smpp.md). A listener of its own (server.ts) takes
// ESMEs' binds with each workspace's credentials (credentials.ts); their submits become sends
// down the API's send path (submit.ts); receipts and received SMS go back to receiver binds
// through an outbox (deliveries.ts) that any server holding a bind drains.
import type { NetworkListener } from "../descriptor";
import type { AppSelf, ModuleDescriptor, Services } from "../../services-type";
import { smppRoutes } from "./routes";
import { type SmppLimits, startSmppListener } from "./server";
import { createSubmitter, originOf } from "./submit";

export { createSmppModule, type SmppService } from "./service";

/** The SMPP listener on the configured ports (null when both are off); `limits` replaces documented ones (tests). */
export async function listen(s: Services, app: AppSelf, limits?: Partial<SmppLimits>): Promise<NetworkListener | null> {
  const { smpp, tls, host } = s.config;
  if (smpp.port === null && smpp.tlsPort === null) return null;
  const submitter = createSubmitter({
    handle: (request) => app.handle(request),
    authenticate: (headers, freshness) => s.accounts.authenticate(headers, freshness),
    rateLimiter: s.rateLimiter,
    sending: s.sending,
    clock: s.clock,
    logger: s.logger,
    repo: s.smpp.repo,
    ownNumbers: (workspaceId) => s.pools.ownNumbers(workspaceId),
    pools: async (workspaceId) => (await s.pools.list(workspaceId)).pools,
    workspaceCountry: async (workspaceId) => (await s.safety.settings(workspaceId)).defaultCountry,
    concatWaitMs: limits?.concatWaitMs,
  });
  const listener = await startSmppListener({
    host,
    port: smpp.port,
    tlsPort: smpp.tlsPort,
    tls,
    clock: s.clock,
    logger: s.logger,
    credentials: s.smpp.credentials,
    rateLimiter: s.rateLimiter,
    submitter,
    deliveries: s.smpp.deliveries,
    limits,
  });
  s.smpp.listening.port = listener.ports.plain;
  s.smpp.listening.tlsPort = listener.ports.tls;
  s.smpp.unbindAll = (systemId) => listener.unbindAll(systemId);
  let stopped = false;
  s.metrics.section(async (page) => {
    if (stopped) return;
    page.family("pigeon_smpp_binds", "gauge", "SMPP binds open on this server, by kind.");
    for (const [kind, n] of Object.entries(listener.binds())) page.sample("pigeon_smpp_binds", { kind }, n);
    page.family("pigeon_smpp_pdus_total", "counter", "SMPP PDUs this server received and sent, by command and (for responses) status.");
    for (const [key, n] of listener.counters.pdus) {
      const [command, status] = key.split("\n");
      page.sample("pigeon_smpp_pdus_total", { command, status: status === "-1" ? "" : status }, n);
    }
    page.family("pigeon_smpp_outbox_waiting", "gauge", "deliver_sm PDUs waiting for a receiver bind, by kind (receipt, message).");
    const waiting = new Map((await s.smpp.deliveries.waiting()).map((w) => [w.kind, w.n]));
    for (const kind of ["receipt", "message"]) page.sample("pigeon_smpp_outbox_waiting", { kind }, waiting.get(kind) ?? 0);
  });
  return {
    describe: () => listener.describe(),
    async stop(graceMs: number) {
      stopped = true;
      s.smpp.listening.port = null;
      s.smpp.listening.tlsPort = null;
      s.smpp.unbindAll = () => {};
      await listener.stop(graceMs);
    },
  };
}

export const smppModule: ModuleDescriptor = {
  name: "smpp",
  routes: (s) => ({ api: [smppRoutes(s)] }),
  listen: (s, app) => listen(s, app),
  listeners: (s) => ({
    // Inside the send's unit of work: where each send the listener made came from.
    stored: async (accepted) => {
      const origins = accepted.flatMap((a) => {
        const origin = originOf.get(a.prepared);
        return origin ? [{ notificationId: a.notificationId, ...origin }] : [];
      });
      if (origins.length > 0) await s.smpp.noteOrigins(origins);
    },
    transition: (before, to, opts) => s.smpp.deliveries.onTransition(before, to, opts),
  }),
  tasks: (s) => [{ name: "smpp:prune", everySeconds: 3600, run: () => s.smpp.deliveries.prune() }],
  // A stopped server's deliver_sm PDUs go to the binds that are left without waiting out its lease.
  recover: async (s) => {
    const n = await s.smpp.repo.releaseAbandoned(s.clock.now(), s.cluster.abandoned);
    return n > 0 ? `${n} SMPP deliver_sm taken back from a stopped server` : null;
  },
};
