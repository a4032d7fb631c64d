// The request signature Twilio (and the cloud SMS provider, which signs as Twilio does) puts on its
// calls: HMAC-SHA1 keyed with the auth token over the full URL followed by every POST parameter's
// name and value, sorted by name; base64, in `X-Twilio-Signature`. Pigeon checks it on the
// provider's callbacks and signs its own Twilio-style posts with it.
import { createHmac, timingSafeEqual } from "node:crypto";

/** Parameters as pairs (a name may repeat: its values then follow in the order given) or one value each. */
export type SignedParams = Record<string, string> | readonly (readonly [string, string])[];

export function twilioSignature(authToken: string, url: string, params: SignedParams): string {
  const pairs = Array.isArray(params) ? [...params] : Object.entries(params);
  // A stable sort by name keeps a repeated name's values in their order.
  const payload =
    url +
    pairs
      .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
      .map(([k, v]) => k + v)
      .join("");
  return createHmac("sha1", authToken).update(payload).digest("base64");
}

export function verifyTwilioSignature(authToken: string, url: string, params: SignedParams, presented: string | null): boolean {
  if (!presented) return false;
  const expected = Buffer.from(twilioSignature(authToken, url, params));
  const given = Buffer.from(presented);
  return expected.length === given.length && timingSafeEqual(expected, given);
}
