// The platform's error codes and the shapes Graph answers them in, so refusals from the fake read
// exactly like the platform's own.
import { randomBytes } from "node:crypto";

interface CodeInfo {
  status: number;
  title: string;
  details: string;
}

/** HTTP status, title and a default details string per platform code, as in Meta's table. */
export const PLATFORM_ERRORS: Record<number, CodeInfo> = {
  0: { status: 401, title: "AuthException", details: "We were unable to authenticate the app user." },
  1: { status: 400, title: "API Unknown", details: "Invalid request or possible server error." },
  2: { status: 503, title: "API Service", details: "Temporary due to downtime or due to being overloaded." },
  3: { status: 500, title: "API Method", details: "Capability or permissions issue." },
  4: { status: 400, title: "API Too Many Calls", details: "The app has reached its API call rate limit." },
  10: { status: 403, title: "Permission Denied", details: "Permission is either not granted or has been removed." },
  33: { status: 400, title: "Parameter value is not valid", details: "The business phone number has been deleted." },
  100: { status: 400, title: "Invalid parameter", details: "The request included one or more unsupported or misspelled parameters." },
  190: { status: 401, title: "Access token has expired", details: "Your access token has expired." },
  200: { status: 403, title: "API Permission", details: "Permission is either not granted or has been removed." },
  368: {
    status: 403,
    title: "Temporarily blocked for policies violations",
    details: "The WhatsApp Business Account associated with the app has been restricted or disabled for violating a platform policy.",
  },
  80007: { status: 400, title: "Rate limit issues", details: "The WhatsApp Business Account has reached its rate limit." },
  130429: { status: 400, title: "Rate limit hit", details: "Cloud API message throughput has been reached." },
  130472: {
    status: 400,
    title: "User's number is part of an experiment",
    details: "Failed to send message because this user's phone number is part of an experiment.",
  },
  130497: {
    status: 403,
    title: "Business account is restricted from messaging users in this country",
    details: "The WhatsApp Business Account is restricted from messaging users in this country.",
  },
  131000: { status: 500, title: "Something went wrong", details: "Message failed to send due to an unknown error." },
  131005: { status: 403, title: "Access denied", details: "Permission is either not granted or has been removed." },
  131008: { status: 400, title: "Required parameter is missing", details: "The request is missing a required parameter." },
  131009: { status: 400, title: "Parameter value is not valid", details: "One or more parameter values are invalid." },
  131016: { status: 500, title: "Service unavailable", details: "A service is temporarily unavailable." },
  131021: { status: 400, title: "Recipient cannot be sender", details: "Sender and recipient phone number is the same." },
  131026: { status: 400, title: "Message undeliverable", details: "Unable to deliver message." },
  131030: { status: 400, title: "Recipient phone number not in allowed list", details: "Recipient phone number not in allowed list." },
  131031: {
    status: 403,
    title: "Account has been locked",
    details: "The WhatsApp Business Account associated with the app has been restricted or disabled.",
  },
  131042: { status: 400, title: "Business eligibility payment issue", details: "There was an error related to your payment method." },
  131045: { status: 500, title: "Incorrect certificate", details: "Message failed to send due to a phone number registration error." },
  131047: {
    status: 400,
    title: "Re-engagement message",
    details: "More than 24 hours have passed since the recipient last replied to the sender number.",
  },
  131048: {
    status: 400,
    title: "Spam rate limit hit",
    details: "Message failed to send because there are restrictions on how many messages can be sent from this phone number.",
  },
  131049: {
    status: 400,
    title: "Meta chose not to deliver.",
    details: "This message was not delivered to maintain healthy ecosystem engagement.",
  },
  131050: {
    status: 400,
    title: "Unable to deliver the message. This recipient has chosen to stop receiving marketing messages on WhatsApp from your business.",
    details: "The recipient has stopped marketing messages.",
  },
  131051: { status: 400, title: "Unsupported message type", details: "Unsupported message type." },
  131052: { status: 400, title: "Media download error", details: "Unable to download the media sent by the user." },
  131053: { status: 400, title: "Media upload error", details: "Unable to upload the media used in the message." },
  131056: {
    status: 400,
    title: "(Business Account, Consumer Account) pair rate limit hit",
    details: "Too many messages sent from the sender phone number to the same recipient phone number in a short period of time.",
  },
  131057: { status: 500, title: "Account in maintenance mode", details: "Business Account is in maintenance mode." },
  132000: {
    status: 400,
    title: "Number of parameters does not match the expected number of params",
    details: "The number of variable parameter values does not match the number of variables defined in the template.",
  },
  132001: {
    status: 404,
    title: "Template name does not exist in the translation",
    details: "The template does not exist in the specified language or has not been approved.",
  },
  132005: { status: 400, title: "Translated text too long", details: "Translated text is too long." },
  132007: { status: 400, title: "Template Format Character Policy Violated", details: "Template content violates a WhatsApp policy." },
  132012: {
    status: 400,
    title: "Parameter format does not match format in the created template",
    details: "Variable parameter values formatted incorrectly.",
  },
  132015: {
    status: 400,
    title: "Template is Paused",
    details: "Template is paused due to low quality so it cannot be sent in a template message.",
  },
  132016: {
    status: 400,
    title: "Template is Disabled",
    details: "Template has been paused too many times due to low quality and is now permanently disabled.",
  },
  132068: { status: 400, title: "Flow is in blocked state", details: "Flow is in blocked state." },
  132069: {
    status: 400,
    title: "Flow is in throttled state",
    details: "Flow is in throttled state and 10 messages using this flow were already sent in the last hour.",
  },
  133004: { status: 503, title: "Server Temporarily Unavailable", details: "Server is temporarily unavailable." },
  133010: {
    status: 400,
    title: "Phone number Not Registered",
    details: "The phone number is not registered on the WhatsApp Business Platform.",
  },
  133016: {
    status: 400,
    title: "Account register or deregister rate limit exceeded",
    details: "Registration or deregistration failed because there were too many attempts for this phone number in a short period of time.",
  },
  135000: {
    status: 400,
    title: "Generic user error",
    details: "Message failed to send because of an unknown error with your request parameters.",
  },
};

/** Meta's table; codes 200-299 share one row, and unknown codes are treated as a bad request. */
export function platformErrorInfo(code: number): CodeInfo {
  const known = PLATFORM_ERRORS[code];
  if (known) return known;
  if (code >= 200 && code <= 299) return PLATFORM_ERRORS[200];
  return { status: 400, title: "Error", details: `Platform error ${code}.` };
}

/** Deprecated per Meta, yet present in its own examples and in captured responses; adapters must tolerate it. */
const SUBCODES: Record<number, number> = { 130429: 2494055, 131056: 2494071 };
const ERROR_HREF = "https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/";

export interface GraphErrorBody {
  error: {
    message: string;
    type: string;
    code: number;
    error_subcode?: number;
    error_data?: { messaging_product: "whatsapp"; details: string };
    fbtrace_id: string;
  };
}

export interface WebhookError {
  code: number;
  title: string;
  message: string;
  error_data: { details: string };
  href: string;
}

export const fbtraceId = () => randomBytes(17).toString("base64url").slice(0, 23);
export const json = (status: number, body: unknown) => Response.json(body, { status });

export function platformErrorBody(code: number, details?: string, title?: string): GraphErrorBody {
  const info = platformErrorInfo(code);
  const error: GraphErrorBody["error"] = {
    message: `(#${code}) ${title ?? info.title}`,
    type: "OAuthException",
    code,
    error_data: { messaging_product: "whatsapp", details: details ?? info.details },
    fbtrace_id: fbtraceId(),
  };
  if (SUBCODES[code]) error.error_subcode = SUBCODES[code];
  return { error };
}

export function webhookError(code: number, details?: string, title?: string): WebhookError {
  const info = platformErrorInfo(code);
  const text = title ?? info.title;
  return { code, title: text, message: text, error_data: { details: details ?? info.details }, href: ERROR_HREF };
}

export const authError = (message: string, subcode?: number) =>
  json(401, {
    error: { message, type: "OAuthException", code: 190, ...(subcode ? { error_subcode: subcode } : {}), fbtrace_id: fbtraceId() },
  });

/** Graph's answer for an id that is unknown or hidden from this token: the two are indistinguishable on purpose. */
export const unsupportedObject = (method: string, id: string) =>
  json(400, {
    error: {
      message: `Unsupported ${method.toLowerCase()} request. Object with ID '${id}' does not exist, cannot be loaded due to missing permissions, or does not support this operation. Please read the Graph API documentation at https://developers.facebook.com/docs/graph-api`,
      type: "GraphMethodException",
      code: 100,
      error_subcode: 33,
      fbtrace_id: fbtraceId(),
    },
  });

export const graphParamError = (message: string) =>
  json(400, { error: { message: `(#100) ${message}`, type: "OAuthException", code: 100, fbtrace_id: fbtraceId() } });
