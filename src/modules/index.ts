// The modules the server is made of, in the order their routes are mounted (which is also the
// order of the API document's paths), and the order in which they hear of the notifications'
// lifecycle. The app, the worker and `pigeon serve` iterate these lists; src/services.ts builds each
// module's service. Adding a module: docs/dev/architecture.md, "Adding a module".
import type { ModuleDescriptor } from "../services-type";
import { accountsModule } from "./accounts";
import { contactsModule } from "./contacts";
import { creditsModule } from "./credits";
import { devicesModule } from "./devices";
import { emailModule } from "./email";
import { eventsModule } from "./events";
import { inboundModule } from "./inbound";
import { mcpModule } from "./mcp";
import { metricsModule } from "./metrics";
import { notificationsModule } from "./notifications";
import { overviewModule } from "./overview";
import { poolsModule } from "./pools";
import { privacyModule } from "./privacy";
import { retentionModule } from "./retention";
import { rulesModule } from "./rules";
import { safetyModule } from "./safety";
import { sendingModule } from "./sending";
import { smsgateModule } from "./smsgate";
import { smppModule } from "./smpp";
import { statsModule } from "./stats";
import { systemModule } from "./system";
import { templatesModule } from "./templates";
import { threadsModule } from "./threads";
import { twilioModule } from "./twilio";
import { usersModule } from "./users";
import { verifyModule } from "./verify";
import { webhooksModule } from "./webhooks";
import { workspacesModule } from "./workspaces";

export const MODULES: readonly ModuleDescriptor[] = [
  systemModule,
  metricsModule,
  accountsModule,
  usersModule,
  workspacesModule,
  creditsModule,
  eventsModule,
  devicesModule,
  contactsModule,
  templatesModule,
  sendingModule,
  safetyModule,
  privacyModule,
  poolsModule,
  rulesModule,
  inboundModule,
  twilioModule,
  verifyModule,
  notificationsModule,
  statsModule,
  webhooksModule,
  threadsModule,
  overviewModule,
  smsgateModule,
  retentionModule,
  mcpModule,
  emailModule,
  smppModule,
];

/**
 * Who hears of a notification's changes first. The order is the point: each listener sees what
 * those before it did in the same unit of work.
 * - verify: a one-time code is masked once its channel took it, before anyone reads the text, so
 *   the events written next and everything after carry the masked code;
 * - pools: a carrier failure pauses the member before the channel reacts to the change;
 * - notifications: the change's event goes into the outbox before its channel hears of it, so a
 *   channel never acts on a change the outbox missed;
 * - metrics: counts what committed;
 * - twilio: status callbacks are posted last, after everything they might report on.
 * Modules not named here hear after these, in MODULES order.
 */
export const LISTENING: readonly string[] = ["verify", "pools", "notifications", "metrics", "twilio"];

/** The modules in the order they hear of changes: LISTENING first, then the rest in MODULES order. */
export function inListeningOrder(modules: readonly ModuleDescriptor[]): ModuleDescriptor[] {
  const rank = (m: ModuleDescriptor) => {
    const at = LISTENING.indexOf(m.name);
    return at === -1 ? LISTENING.length : at;
  };
  return modules
    .map((m, i) => ({ m, i }))
    .sort((a, b) => rank(a.m) - rank(b.m) || a.i - b.i)
    .map(({ m }) => m);
}
