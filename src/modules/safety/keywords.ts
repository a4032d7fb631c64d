// The keywords an inbound message may be: on every channel, a whole message that is an opt-out
// keyword suppresses its sender, an opt-in keyword lifts that, a help keyword asks for the help
// text; each answered with the workspace's reply. The message itself still lands in its thread.
import type { DeliveryType } from "../../core/kinds";
import type { Inbound } from "../threads/inbound";
import type { SafetyService } from "./service";

export interface KeywordDeps {
  safety: SafetyService;
  /** Sends `text` back through the device the message came in on, once the inbound is stored. */
  reply: (to: { workspaceId: number; channel: DeliveryType; deviceId: number; recipient: string }, text: string, why: string) => void;
}

/** Longer than any keyword: not worth normalising. */
const LONGEST = 64;

/** The hook: true when the message was one of the keywords (then no inbound rule hears it). */
export function createKeywordHook({ safety, reply }: KeywordDeps) {
  return async (m: Inbound, stored: { threadId: number; messageId: number }): Promise<boolean> => {
    // A data SMS has no words: STOP in its bytes is not a request.
    if (m.dataMessage || m.body.length > LONGEST) return false;
    const keyword = await safety.keywordOf(m.workspaceId, m.body);
    if (keyword === null) return false;
    const settings = await safety.settings(m.workspaceId);
    const ctx = {
      source: "keyword" as const,
      reason: `texted "${m.body.trim()}"`,
      threadMessageId: stored.messageId,
      channel: m.channel,
      deviceId: m.deviceId,
    };
    let text: string;
    if (keyword === "opt_out") {
      // A repeated STOP changes nothing and gets no second confirmation.
      if (!(await safety.optOut(m.workspaceId, m.from, ctx))) return true;
      text = settings.optOutReply;
    } else if (keyword === "opt_in") {
      // "YES" from someone who never opted out is an ordinary answer, not a request.
      if (!(await safety.optIn(m.workspaceId, m.from, ctx))) return true;
      text = settings.optInReply;
    } else {
      text = settings.helpReply;
    }
    if (text !== "")
      reply({ workspaceId: m.workspaceId, channel: m.channel, deviceId: m.deviceId, recipient: m.from }, text, `${keyword} reply`);
    return true;
  };
}
