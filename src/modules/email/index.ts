// The email module: mail in, SMS out (docs/email.md). An SMTP listener of its own (smtp.ts, with
// TLS from tls.ts) turns each mail into sends through Pigeon's API in process (bridge.ts), under
// each workspace's settings (settings.ts), which the API's /v1/api/email routes change.
import type { ModuleDescriptor, Services } from "../../services-type";
import type { AppSelf } from "../../services-type";
import { createBridge } from "./bridge";
import { emailRoutes } from "./routes";
import { createEmailSettings, type EmailSettingsDeps } from "./settings";
import { type SmtpListenerOptions, startSmtpListener } from "./smtp";

export function createEmailModule(deps: EmailSettingsDeps) {
  return createEmailSettings(deps);
}

/** The SMTP listener on the configured ports (null when both are off); `limits` replaces documented ones (tests). */
export async function listen(s: Services, app: AppSelf, limits?: SmtpListenerOptions["limits"]) {
  const { smtp, tls, host } = s.config;
  if (smtp.port === null && smtp.tlsPort === null) return null;
  const bridge = createBridge({
    handle: (request) => app.handle(request),
    accounts: s.accounts,
    rateLimiter: s.rateLimiter,
    contacts: s.contacts,
    settings: s.email,
  });
  return startSmtpListener({
    bridge,
    log: s.log,
    host,
    port: smtp.port,
    tlsPort: smtp.tlsPort,
    tls,
    plainLoopback: smtp.plainLoopback,
    limits,
  });
}

export const emailModule: ModuleDescriptor = {
  name: "email",
  routes: (s) => ({ api: [emailRoutes(s)] }),
  listen: (s, app) => listen(s, app),
};
