// Every client-visible error has a stable code; this one table maps each code to its HTTP status.
// Services throw AppError with one of these codes; the error plugin turns it into the envelope.

export const ERROR_STATUS = {
  // 400: the request itself is wrong
  validation_error: 400,
  invalid_json: 400,
  invalid_phone_number: 400,
  invalid_email: 400,
  message_too_long: 400,
  message_required: 400,
  content_conflict: 400,
  invalid_data_encoding: 400,
  data_message_empty: 400,
  data_message_too_long: 400,
  invalid_port: 400,
  data_message_unsupported: 400,
  invalid_template_variables: 400,
  invalid_template_body: 400,
  invalid_schedule_time: 400,
  invalid_timezone: 400,
  invalid_country: 400,
  schedule_time_in_past: 400,
  invalid_valid_until: 400,
  ttl_with_valid_until: 400,
  option_not_supported: 400,
  invalid_sim_number: 400,
  invalid_device: 400,
  no_active_device: 400,
  pool_unavailable: 400,
  invalid_regex: 400,
  device_offline: 400,
  device_inactive: 400,
  template_inactive: 400,
  media_too_large: 400,
  no_business_account: 400,
  no_phone_number: 400,
  invalid_webhook_url: 400,
  invalid_unicode: 400,
  too_deeply_nested: 400,
  keyword_conflict: 400,
  invalid_encrypted_value: 400,
  encrypted_needs_phone: 400,
  encrypted_option_unsupported: 400,
  // 401, 402, 403: who you are and what you may do
  unauthorized: 401,
  key_expired: 401,
  insufficient_credits: 402,
  free_tier_exhausted: 402,
  key_disabled: 403,
  account_suspended: 403,
  forbidden: 403,
  urls_not_allowed: 403,
  template_read_only: 403,
  window_closed: 403,
  use_template: 403,
  device_blocked: 403,
  recipient_opted_out: 403,
  prefix_blocked: 403,
  encrypted_sends_disabled: 403,
  key_scope_denied: 403,
  recipient_not_allowed: 403,
  key_daily_cap: 403,
  approver_needs_approval: 403,
  // 404, 405, 409, 413, 429, 431
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  duplicate_contact: 409,
  duplicate_template_code: 409,
  duplicate_pool: 409,
  duplicate_rule: 409,
  idempotency_key_reuse: 409,
  not_cancellable: 409,
  template_account_unlinked: 409,
  device_account_mismatch: 409,
  not_a_phone: 409,
  app_too_old: 409,
  phone_not_connected: 409,
  no_online_device: 409,
  payload_too_large: 413,
  rate_limited: 429,
  too_many_verifications: 429,
  too_many_checks: 429,
  headers_too_large: 431,
  // 5xx
  internal_error: 500,
  service_unavailable: 503,
  storage_full: 507,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Context fields returned beside error_code in `data`. */
    readonly data: Record<string, unknown> = {},
    /** Overrides the public error_code, e.g. the chat-app platform's numeric code. */
    readonly publicCode?: string | number,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "AppError";
    this.status = ERROR_STATUS[code];
  }
}
