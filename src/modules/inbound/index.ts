// What every inbound message goes through once it is stored and before it is announced, its steps
// and their order written here once:
//   1. the keywords (opt-out, opt-in, help): a keyword is answered by them alone, no rule hears it;
//   2. the inbound rules (src/modules/rules), for any other message;
//   3. for an SMS, the sender sticks to the pool members on the device it wrote to;
//   4. the workspace's (or the pool's) Twilio-style incoming-message URL hears every message,
//      keywords too, as Twilio's does;
//   5. the email bridge queues its forward to the workspace's mailboxes, keywords too (staff see
//      every text the number gets);
//   6. an SMS (a data SMS too) is queued for the workspace's SMPP receiver binds, keywords too,
//      as the platform behind them would see every message an SMSC takes.
// A data SMS (bytes to a port, no text) is no keyword, reaches only the rules that match any
// message, and is not posted to the Twilio-style URL, whose form has no place for it.
import type { ModuleDescriptor } from "../../services-type";
import type { Inbound, InboundHook } from "../threads/inbound";

type Stored = Parameters<InboundHook>[1];

export interface InboundSteps {
  /** True when the message was a keyword, answered. */
  keywords: (m: Inbound, stored: Stored) => Promise<boolean>;
  rules: (m: Inbound, stored: Stored) => Promise<unknown>;
  /** The pools note who wrote to which device (and SIM). */
  heardFrom: (workspaceId: number, deviceId: number, sender: string, simNumber: number | null) => Promise<void>;
  twilioIncoming: (m: Inbound, stored: Stored) => Promise<void>;
  /** Queues the message's forward by email (src/modules/email/forward.ts). */
  email: (m: Inbound, stored: Stored) => Promise<void>;
  /** Queues its deliver_sm to the workspace's SMPP receiver binds (src/modules/smpp/deliveries.ts). */
  smpp: (m: Inbound, stored: Stored) => Promise<void>;
}

export function createInboundPipeline(steps: InboundSteps): InboundHook {
  return async (m, stored) => {
    if (!(await steps.keywords(m, stored))) await steps.rules(m, stored);
    if (m.channel === "sms") await steps.heardFrom(m.workspaceId, m.deviceId, m.from, m.simNumber ?? null);
    if (!m.dataMessage) await steps.twilioIncoming(m, stored);
    if (!m.dataMessage) await steps.email(m, stored);
    await steps.smpp(m, stored);
  };
}

/** The pipeline serves no routes and runs no task: the composition root hands it to the threads. */
export const inboundModule: ModuleDescriptor = { name: "inbound" };
