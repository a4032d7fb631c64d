// The chat-app platform's error codes (the Cloud API's published error code list) and what
// each means for us: try again later, slow down, give up on this message, or block the number
// (an account, token or business-account problem that every later send would hit too).
export type PlatformErrorClass = "retry" | "throttle" | "permanent" | "block";

interface CodeInfo {
  cls: PlatformErrorClass;
  title: string;
}

const TABLE: Record<number, CodeInfo> = {
  // Account, token or business-account level: block the number until it is fixed.
  0: { cls: "block", title: "Authentication failed: token expired, invalidated or revoked" },
  3: { cls: "block", title: "Capability or permission issue" },
  10: { cls: "block", title: "Permission denied" },
  190: { cls: "block", title: "Access token has expired or was revoked" },
  368: { cls: "block", title: "Temporarily blocked for policy violations" },
  33: { cls: "block", title: "Business phone number deleted" },
  131005: { cls: "block", title: "Access denied" },
  131031: { cls: "block", title: "Account has been locked" },
  131042: { cls: "block", title: "Business eligibility payment issue" },
  131045: { cls: "block", title: "Incorrect certificate: phone number registration error" },
  133010: { cls: "block", title: "Phone number not registered on the platform" },
  // Transient: retried with backoff, a few times.
  1: { cls: "retry", title: "Invalid request or possible server error" },
  2: { cls: "retry", title: "Temporary downtime or overload" },
  4: { cls: "retry", title: "App hit its call-rate limit" },
  80007: { cls: "retry", title: "Business account rate limit reached" },
  131000: { cls: "retry", title: "Something went wrong" },
  131016: { cls: "retry", title: "Service unavailable" },
  131048: { cls: "retry", title: "Spam rate limit hit" },
  131057: { cls: "retry", title: "Account in maintenance mode" },
  132069: { cls: "retry", title: "Flow is throttled" },
  133016: { cls: "retry", title: "Register/deregister rate limit" },
  // Throughput: slow this business number down.
  130429: { cls: "throttle", title: "Rate limit hit: throughput exceeded" },
  131056: { cls: "throttle", title: "Too many messages to this user: pair rate limit hit" },
  // Permanent for this message.
  100: { cls: "permanent", title: "Invalid parameter" },
  130472: { cls: "permanent", title: "User's number is part of an experiment" },
  130497: { cls: "permanent", title: "Business account restricted from messaging users in this country" },
  131008: { cls: "permanent", title: "Required parameter is missing" },
  131009: { cls: "permanent", title: "Parameter value is not valid" },
  131021: { cls: "permanent", title: "Recipient cannot be sender" },
  131026: { cls: "permanent", title: "Message undeliverable" },
  131030: { cls: "permanent", title: "Recipient not in allowed list" },
  131047: { cls: "permanent", title: "Re-engagement message: more than 24 hours since the user last replied" },
  131049: { cls: "permanent", title: "Meta chose not to deliver this message" },
  131050: { cls: "permanent", title: "User stopped marketing messages" },
  131051: { cls: "permanent", title: "Unsupported message type" },
  131052: { cls: "permanent", title: "Media download error" },
  131053: { cls: "permanent", title: "Media upload error" },
  132000: { cls: "permanent", title: "Template parameter count mismatch" },
  132001: { cls: "permanent", title: "Template name does not exist in that language" },
  132005: { cls: "permanent", title: "Template hydrated text too long" },
  132007: { cls: "permanent", title: "Template format character policy violated" },
  132012: { cls: "permanent", title: "Template parameter format mismatch" },
  132015: { cls: "permanent", title: "Template paused for low quality" },
  132016: { cls: "permanent", title: "Template disabled" },
  132068: { cls: "permanent", title: "Flow is blocked" },
  // The spec: platform server unavailable counts as permanent.
  133004: { cls: "permanent", title: "Server temporarily unavailable" },
  135000: { cls: "permanent", title: "Generic user error" },
};

export function classifyPlatformCode(code: number): CodeInfo {
  const known = TABLE[code];
  if (known) return known;
  // 200-299: API permission errors, an account problem.
  if (code >= 200 && code <= 299) return { cls: "block", title: "API permission error" };
  return { cls: "permanent", title: "Platform error" };
}
