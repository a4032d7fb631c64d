// The email module: mail in, SMS out (docs/email.md). An SMTP listener of its own (smtp.ts, with
// TLS from tls.ts) turns each mail into sends through Pigeon's API in process (bridge.ts), under
// each workspace's settings (settings.ts), which the API's /v1/api/email routes change.
import type { NetworkListener } from "../descriptor";
import type { ModuleDescriptor, Services } from "../../services-type";
import type { AppSelf } from "../../services-type";
import { createBridge } from "./bridge";
import { createEmailForwarding, type ForwardDeps } from "./forward";
import { createEmailRepository } from "./repository";
import { emailRoutes } from "./routes";
import { createEmailSettings, type EmailSettingsDeps } from "./settings";
import type { SmtpListenerOptions } from "./smtp";

/** The email bridge's settings, and (given the rest of its deps) its forwarding, over one repository. */
export function createEmailModule(deps: Omit<EmailSettingsDeps, "repo">) {
  const repo = createEmailRepository(deps.storage);
  const settings = createEmailSettings({ ...deps, repo });
  return {
    settings,
    forwarding: (more: Omit<ForwardDeps, "repo" | "settings">) => createEmailForwarding({ ...more, repo, settings }),
  };
}

/** The SMTP listener on the configured ports (null when both are off); `limits` replaces documented ones (tests). */
export async function listen(
  s: Services,
  app: AppSelf,
  limits?: SmtpListenerOptions["limits"],
  testing: Pick<SmtpListenerOptions, "terminatorDelayMs"> = {},
): Promise<NetworkListener | null> {
  const { smtp, tls, host } = s.config;
  if (smtp.port === null && smtp.tlsPort === null) return null;
  // Loaded only when the listener is on: smtp-server and mailparser cost a server that takes no mail
  // memory it never uses.
  const { startSmtpListener } = await import("./smtp");
  const bridge = createBridge({
    handle: (request) => app.handle(request),
    accounts: s.accounts,
    rateLimiter: s.rateLimiter,
    contacts: s.contacts,
    threads: s.threads,
    settings: s.email,
    workspaceCountry: async (workspaceId) => (await s.safety.settings(workspaceId)).defaultCountry,
    noteOrigins: (workspaceId, ids, mailFrom, subject) => s.emailForward.noteOrigins(workspaceId, ids, mailFrom, subject),
  });
  const listener = await startSmtpListener({
    bridge,
    clock: s.clock,
    log: s.log,
    host,
    port: smtp.port,
    tlsPort: smtp.tlsPort,
    tls,
    plainLoopback: smtp.plainLoopback,
    limits,
    ...testing,
  });
  s.email.listening.smtp = listener.ports.smtp;
  s.email.listening.smtps = listener.ports.smtps;
  return {
    describe: () => listener.describe(),
    async stop(graceMs: number) {
      s.email.listening.smtp = null;
      s.email.listening.smtps = null;
      await listener.stop(graceMs);
    },
  };
}

export const emailModule: ModuleDescriptor = {
  name: "email",
  routes: (s) => ({ api: [emailRoutes(s)] }),
  listen: (s, app) => listen(s, app),
  listeners: (s) => ({
    transition: (before, to, opts) =>
      to === "failed" ? s.emailForward.onFailed(before, opts.reason ?? null, opts.errorCode ?? null) : undefined,
  }),
  tasks: (s) => [{ name: "email:forward", everySeconds: s.config.workerIntervalSeconds, run: () => s.emailForward.deliverDue() }],
};
