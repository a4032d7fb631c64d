// The SMPP module's service: the credentials, the outbox of deliver_sm PDUs, and (while the
// listener runs) its ports and binds. Apart from index.ts so that the services' type can name it
// without importing the module's routes.
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import type { Logger } from "../../lib/log";
import type { SecretBox } from "../../lib/secrets";
import type { AccountsService } from "../accounts/service";
import type { Inbound } from "../threads/inbound";
import { createSmppCredentials } from "./credentials";
import { createSmppDeliveries } from "./deliveries";
import { createSmppRepository } from "./repository";

export interface SmppModuleDeps {
  storage: Storage;
  clock: Clock;
  secrets: SecretBox;
  logger: Pick<Logger, "info" | "warn" | "error">;
  serverId: string;
  accounts: Pick<AccountsService, "createKey" | "keyById" | "setKeyStatus">;
  ownNumbers: (workspaceId: number) => Promise<{ number: string; deviceId: number; simNumber: number | null }[]>;
}

/** The SMPP service: credentials, the outbox, and (while the listener runs) its ports and binds. */
export function createSmppModule(deps: SmppModuleDeps) {
  const repo = createSmppRepository(deps.storage);
  const credentials = createSmppCredentials({ ...deps, repo });
  const deliveries = createSmppDeliveries({ ...deps, repo });
  const state = {
    repo,
    credentials,
    deliveries,
    /** The ports the listener bound (0 picks one), while it listens. */
    listening: { port: null as number | null, tlsPort: null as number | null },
    /** Unbinds the binds of `systemId` this server holds (its password was issued again). */
    unbindAll: (_systemId: string) => {},
    /** Inside the send's unit of work: where the sends came from (the receipts they are owed). */
    async noteOrigins(
      origins: {
        notificationId: number;
        workspaceId: number;
        systemId: string;
        registeredDelivery: number;
        parts: number;
        addresses: unknown;
      }[],
    ): Promise<void> {
      const now = deps.clock.now();
      for (const o of origins) await repo.recordOrigin({ ...o, addresses: JSON.stringify(o.addresses), createdAt: now });
    },
    /** A received SMS, inside the unit that stored it: queued for the workspace's receiver binds. */
    async onInbound(m: Inbound, stored: { messageId: number }): Promise<void> {
      if (m.channel !== "sms") return;
      const c = await credentials.get(m.workspaceId);
      if (c?.receivesIncoming) await deliveries.onInbound(m, stored, c.systemId);
    },
  };
  return state;
}

export type SmppService = ReturnType<typeof createSmppModule>;
