// Accepting a message: every check of spec sections 4 and 7 that can be made before anything is
// written, then the writes (store the notification, debit its credits) in the caller's unit of
// work (batched with its turn's others: the group commit). After commit, listeners wake whoever
// carries it. It answers with data; the routes present it, and src/http/idempotency keeps the
// reply for repeats. Put together from its parts: the device choice (device-choice.ts), the text
// (content.ts), the checks (prepare.ts), the writes (accept.ts) and failover (failover.ts); what
// they share is in context.ts and the types they take and give in types.ts.
import type { DeliveryType } from "../../core/kinds";
import { createAccepting } from "./accept";
import { createContent } from "./content";
import { createSendingContext } from "./context";
import { createDeviceChoice } from "./device-choice";
import { createEncryptedPreparing } from "./encrypted";
import { createFailover } from "./failover";
import { createPreparing, safetyMemo } from "./prepare";
import type { Accepted, ChannelCheck, SendingDeps } from "./types";

export function createSendingService(deps: SendingDeps) {
  const ctx = createSendingContext(deps);
  const choice = createDeviceChoice(ctx);
  const content = createContent(ctx);
  const encrypted = createEncryptedPreparing(ctx, choice, safetyMemo);
  const preparing = createPreparing(ctx, choice, content, encrypted.prepareEncrypted);
  const accepting = createAccepting(ctx, preparing.prepare);
  const failing = createFailover(ctx, preparing.prepareRoute);
  return {
    prepare: preparing.prepare,
    readAhead: preparing.readAhead,
    preview: accepting.preview,
    accept: accepting.accept,
    acceptTogether: accepting.acceptTogether,
    smsUsedThisMonth: accepting.smsUsedThisMonth,
    failover: failing.failover,
    failoverStranded: failing.failoverStranded,
    /** Adds a channel's own check to the ones every send goes through. */
    addCheck(channel: DeliveryType, check: ChannelCheck) {
      ctx.channelChecks[channel].push(check);
    },
    onAccepted(listener: (accepted: Accepted[]) => void | Promise<void>) {
      ctx.acceptedListeners.push(listener);
    },
    /** Runs `listener` with what a send stores, inside its unit of work (so it commits, or not, with the rows). */
    onStored(listener: (accepted: Accepted[]) => Promise<void>) {
      ctx.storeListeners.push(listener);
    },
  };
}

export type SendingService = ReturnType<typeof createSendingService>;
