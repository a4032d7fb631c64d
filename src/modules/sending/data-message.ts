// A send's data SMS (`data_message` on Pigeon's routes, `dataMessage` on SMSGate's): checked before
// anything else of its content, so a bad payload or port is refused with its own code and nothing
// is stored. A data SMS is its message's only content: no text, no template, no chat-app.
import { AppError } from "../../core/errors";
import { DATA_PORT_MAX, DATA_PORT_MIN, DATA_SMS_MAX_OCTETS, decodeBase64, encodeBase64, type DataMessage } from "../../lib/data-sms";
import type { SendInput } from "./types";

const given = (value: unknown) => value !== undefined && value !== null && !(typeof value === "string" && value.trim() === "");

/**
 * The send's data SMS, checked and with its payload in canonical base64, or null for a text send.
 * `field` is how the caller's API names it (data_message, dataMessage).
 */
export function dataMessageOf(input: SendInput): DataMessage | null {
  const raw = input.dataMessage;
  if (raw === undefined || raw === null) return null;
  const field = dataFieldOf(input);
  refuseOtherContent(input);
  if (input.channel !== "sms")
    throw new AppError("data_message_unsupported", `A data SMS is an SMS: ${field} cannot be sent as ${input.channel}`, { field });
  const data = typeof raw.data === "string" ? raw.data : null;
  if (data === null) throw new AppError("invalid_data_encoding", `${field}.data must be a base64 string`, { field: `${field}.data` });
  const bytes = decodeBase64(data);
  if (bytes === null) {
    throw new AppError("invalid_data_encoding", `${field}.data is not base64 (the standard alphabet, A-Z a-z 0-9 + /, padding optional)`, {
      field: `${field}.data`,
    });
  }
  if (bytes.length === 0)
    throw new AppError("data_message_empty", `${field}.data is empty: a data SMS carries at least one byte`, { field: `${field}.data` });
  if (bytes.length > DATA_SMS_MAX_OCTETS) {
    throw new AppError(
      "data_message_too_long",
      `${field}.data is ${bytes.length} bytes; one data SMS carries at most ${DATA_SMS_MAX_OCTETS} (an SMS's 140 octets less its port header)`,
      { field: `${field}.data`, length: bytes.length, limit: DATA_SMS_MAX_OCTETS },
    );
  }
  return { data: encodeBase64(bytes), port: dataPortOf(raw.port, field) };
}

/** How the caller's API names the data SMS (data_message, dataMessage), for its refusals. */
export const dataFieldOf = (input: SendInput) => input.dataMessageField ?? "data_message";

/** Text or a template beside a data SMS: 400 content_conflict, as a data SMS carries only its bytes. */
export function refuseOtherContent(input: SendInput): void {
  const field = dataFieldOf(input);
  const others = [...(given(input.message) ? [input.messageField ?? "message"] : []), ...(given(input.templateId) ? ["template_id"] : [])];
  if (others.length > 0) {
    throw new AppError(
      "content_conflict",
      `Give one of ${input.messageField ?? "message"}, template_id or ${field}, not several: a data SMS carries only its bytes (templates do not apply)`,
      { fields: [...others, field] },
    );
  }
}

/** A data SMS's port: a whole number from 1 to 65535, or 400 invalid_port. */
export function dataPortOf(port: unknown, field: string): number {
  if (typeof port !== "number" || !Number.isInteger(port) || port < DATA_PORT_MIN || port > DATA_PORT_MAX) {
    throw new AppError("invalid_port", `${field}.port ${String(port)} is not a port from ${DATA_PORT_MIN} to ${DATA_PORT_MAX}`, {
      field: `${field}.port`,
      port: port ?? null,
    });
  }
  return port;
}

/** The refusal of a route or device that cannot carry a data SMS (a cloud number, the chat-app). */
export function dataRefused(what: string, data: Record<string, unknown>): AppError {
  return new AppError("data_message_unsupported", `A data SMS goes out only through a paired phone; ${what}`, {
    field: "data_message",
    ...data,
  });
}
