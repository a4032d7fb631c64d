// Where Twilio's API lives in Pigeon and how its errors read: Twilio's body `{code, message,
// more_info, status}` with its numeric codes, for the Pigeon error codes that have a Twilio twin.
import type { ErrorCode } from "../../core/errors";

export const API_VERSION = "2010-04-01";

/**
 * Twilio's error for a Pigeon error code, with the HTTP status Twilio answers it with; codes with
 * no Twilio twin keep Pigeon's status and get Twilio's generic code for their status.
 */
export const TWILIO_CODES: Partial<Record<ErrorCode, { code: number; status?: number }>> = {
  unauthorized: { code: 20003, status: 401 },
  key_disabled: { code: 20003, status: 401 },
  key_expired: { code: 20003, status: 401 },
  // What a key may not do (its scope, recipients, daily cap): Twilio's "forbidden".
  key_scope_denied: { code: 20403, status: 403 },
  recipient_not_allowed: { code: 20403, status: 403 },
  key_daily_cap: { code: 20403, status: 403 },
  account_suspended: { code: 20005, status: 401 },
  method_not_allowed: { code: 20004 },
  not_found: { code: 20404, status: 404 },
  rate_limited: { code: 20429, status: 429 },
  invalid_phone_number: { code: 21211 },
  message_required: { code: 21602 },
  recipient_opted_out: { code: 21610, status: 400 },
  not_cancellable: { code: 20009, status: 400 },
  // Verify's: too many codes to a number, too many wrong checks, a country prefix's budget spent.
  too_many_verifications: { code: 60203, status: 429 },
  too_many_checks: { code: 60202, status: 429 },
  prefix_blocked: { code: 60410, status: 403 },
};

export const TWILIO_BASE = `/${API_VERSION}/Accounts`;
/** Where Twilio's Verify v2 API lives in Pigeon (Twilio serves it on its own host, verify.twilio.com). */
export const VERIFY_BASE = "/v2/Services";
export const isVerifyPath = (path: string) => path === VERIFY_BASE || path.startsWith(`${VERIFY_BASE}/`);
export const isTwilioPath = (path: string) => path.startsWith(`${TWILIO_BASE}/`) || isVerifyPath(path);

/** Twilio's error body for an error on its paths: its numeric code, and the status it answers with. */
export function twilioError(status: number, code: string | number, message: string, path = "") {
  const verify = isVerifyPath(path);
  // A bad parameter is Verify's 60200 on its paths (an invalid To too: "Invalid parameter: To"), the
  // Messages API's 20001 (21211 for a To) on its own.
  const mapped =
    typeof code === "number" ? { code } : verify && code === "invalid_phone_number" ? undefined : TWILIO_CODES[code as ErrorCode];
  const badParameter = verify ? 60200 : 20001;
  const twilioCode = mapped?.code ?? (status === 404 ? 20404 : status === 405 ? 20004 : status >= 500 ? 20500 : badParameter);
  const answered = mapped?.status ?? status;
  return {
    status: answered,
    body: { code: twilioCode, message, more_info: `https://www.twilio.com/docs/errors/${twilioCode}`, status: answered },
  };
}
