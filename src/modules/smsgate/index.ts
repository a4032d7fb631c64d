// The SMSGate-compatible API as a module: its repository (its message ids, tokens, webhooks and
// settings), its credentials, its service, its webhooks and its settings, built here once.
import type { Authenticator } from "../../core/caller";
import type { SecretBox } from "../../lib/secrets";
import type { AccountsService } from "../accounts/service";
import type { DeviceRow } from "../devices/model";
import type { WebhookService } from "../webhooks/service";
import { createSmsGateAuth } from "./auth";
import { createSmsGateRepository } from "./repository";
import { createSmsGateService, type SmsGateDeps } from "./service";
import { createSmsGateSettings } from "./settings";
import { createSmsGateWebhooks } from "./webhooks";
import type { ModuleDescriptor } from "../../services-type";
import { isSmsGatePath, needsSmsGateAuth } from "./auth";
import { smsGateFastRoutes, smsGateRoutes } from "./routes";

export function createSmsGateModule(
  deps: SmsGateDeps & {
    secrets: SecretBox;
    webhooks: WebhookService;
    authenticate: Authenticator;
    accounts: AccountsService;
  },
) {
  const { clock, secrets, devices } = deps;
  const repo = createSmsGateRepository(deps.storage);
  const webhooks = createSmsGateWebhooks({ clock, secrets, webhooks: deps.webhooks, repo, devices });
  const phoneKinds = new Set<string>(deps.channels.filter((c) => c.needsPresence).map((c) => c.kind));
  return {
    /** SMSGate's third-party API: its Basic and Bearer credentials and its tokens. */
    auth: createSmsGateAuth({ clock, secrets, authenticate: deps.authenticate, accounts: deps.accounts, repo, storage: deps.storage }),
    service: createSmsGateService(deps, repo),
    webhooks,
    settings: createSmsGateSettings({ devices, isPhone: (d: DeviceRow) => phoneKinds.has(d.kind), webhooks }),
  };
}

export const smsgateModule: ModuleDescriptor = {
  name: "smsgate",
  routes: (s) => ({ foreign: [smsGateRoutes(s)] }),
  fastRoutes: (s) => smsGateFastRoutes(s),
  foreign: (s) => ({
    paths: isSmsGatePath,
    gate: { matches: needsSmsGateAuth, authenticate: s.smsgateAuth.authenticate },
    errors: "plain",
  }),
};
