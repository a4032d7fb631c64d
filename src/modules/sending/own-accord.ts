// Messages Pigeon sends by itself: a keyword's confirmation, an inbound rule's replies and
// forwards. In order, each through the device (and SIM) given or the workspace's routing, once the
// unit of work that stored the inbound message has committed. One that cannot go (the device went
// away, the account is suspended) is logged and dropped; the others still go.
import type { AuthContext } from "../../core/caller";
import type { DeliveryType } from "../../core/kinds";
import type { Storage } from "../../db/storage";
import type { LogFn, Logger } from "../../lib/log";
import type { SendingService } from "./service";

/** One message Pigeon sends of its own accord, and why (named in the log when it cannot go). */
export interface OwnAccordMessage {
  to: { workspaceId: number; channel: DeliveryType; deviceId: number | null; simNumber: number | null; recipient: string };
  content: { text: string } | { templateId: number; variables: Record<string, string> };
  why: string;
}

export interface OwnAccordDeps {
  storage: Storage;
  sending: Pick<SendingService, "prepare" | "accept">;
  /** The workspace's caller: its account and plan, as a send through the API has them. */
  callerFor: (workspaceId: number) => Promise<AuthContext>;
  log: LogFn;
  logger: Pick<Logger, "warn">;
}

/** What sends messages of Pigeon's own accord (see the file's head). */
export function createOwnAccordSender(deps: OwnAccordDeps): (list: OwnAccordMessage[]) => void {
  const { storage, sending, log, logger } = deps;
  const send = async ({ to, content, why }: OwnAccordMessage) => {
    try {
      const caller = await deps.callerFor(to.workspaceId);
      const prepared = await sending.prepare(caller, {
        channel: to.channel,
        recipient: to.recipient,
        ...("text" in content ? { message: content.text } : { templateId: content.templateId, variables: content.variables }),
        deviceId: to.deviceId,
        simNumber: to.simNumber,
        system: true,
      });
      const [result] = await storage.transaction(() => sending.accept(caller, [prepared]));
      if (!result.ok) logger.warn(`no ${why} to ${to.recipient}: ${result.error.message}`, { device_id: to.deviceId });
    } catch (error) {
      log(`no ${why} to ${to.recipient}`, error, { device_id: to.deviceId });
    }
  };
  return (list) => {
    // After the inbound message's unit of work has committed (a later turn of the same unit, still
    // running, would otherwise take the reply's statements as its own).
    storage.afterCommit(() => {
      void (async () => {
        for (const item of list) await send(item);
      })();
    });
  };
}
