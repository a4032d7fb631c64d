// The webhooks the phone posts itself (sms:sent, sms:delivered, sms:received, system:ping …),
// signed with the provisioned key the way the app's signing plugin signs them.
import { createHmac } from "node:crypto";
import { nanoid } from "../../lib/tokens";
import { PhonePart } from "./parts";
import {
  backoff,
  errorText,
  failureOf,
  OWN_NUMBER,
  REQUEST_TIMEOUT_MS,
  SIM_NUMBER,
  WEBHOOK_ATTEMPTS,
  type Json,
  type LocalMessage,
  type Webhook,
  type WebhookEvent,
} from "./wire";

export class WebhookPoster extends PhonePart {
  outgoing(message: LocalMessage, recipient: string): Json {
    // Field order follows the app's payload classes; phoneNumber is the deprecated twin of recipient.
    return { messageId: message.id, sender: OWN_NUMBER, recipient, simNumber: message.simNumber ?? SIM_NUMBER, phoneNumber: recipient };
  }

  /** Posts an event to every webhook registered for it; resolves with how many accepted it. */
  emit(event: WebhookEvent, payload: Json): Promise<number> {
    const hooks = this.settings.webhooks.get(event) ?? [];
    const posts = Promise.all(hooks.map((hook) => this.postWebhook(hook, event, payload))).then(
      (results) => results.filter(Boolean).length,
    );
    this.life.track(posts);
    return posts;
  }

  private async postWebhook(hook: Webhook, event: WebhookEvent, payload: Json): Promise<boolean> {
    // The id stays the same across retries so the receiver can drop duplicates.
    const body = JSON.stringify({ id: nanoid(), webhookId: hook.id, event, deviceId: this.client.deviceId, payload });
    let failure = "";
    for (let attempt = 1; attempt <= WEBHOOK_ATTEMPTS; attempt++) {
      if (!(await this.client.online())) break;
      // Signed afresh on every attempt, as the app's signing plugin runs per request.
      const timestamp = String(Math.floor(Date.now() / 1000));
      const signature = createHmac("sha256", this.settings.signingKey)
        .update(body + timestamp)
        .digest("hex");
      try {
        const res = await fetch(hook.url, {
          method: "POST",
          headers: {
            "Content-Type": "application/json",
            "User-Agent": `me.capcom.smsgateway/${this.opts.appVersion}`,
            "X-Timestamp": timestamp,
            "X-Signature": signature,
          },
          body,
          signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        if (res.ok) return true;
        failure = await failureOf(res);
      } catch (error) {
        failure = errorText(error);
      }
      if (attempt < WEBHOOK_ATTEMPTS && !(await this.life.sleep(backoff(attempt)))) break;
    }
    this.log(`webhook ${event} to ${hook.url} failed: ${failure}`);
    return false;
  }
}
