// What a tool is made of (its name, words for the model, schemas and hints, and what it runs) and
// how an API answer becomes a tool result: data as structuredContent with the same as text, and a
// refusal (the API's error envelope) as a tool error carrying Pigeon's error_code, never a protocol error.
import type { TObject } from "@sinclair/typebox";
import type { ApiCall, ApiReply, AgentContext } from "./port";

/** The four hints MCP clients read to decide what to confirm with a person. */
export interface ToolHints {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/** A refusal by the API (or by the tool before it called the API), as the agent sees it. */
export interface Refusal {
  refused: true;
  status: number;
  error_code: string;
  message: string;
  data: Record<string, unknown>;
}

/** What a tool produces: its structured answer with a line for the model, or a refusal. */
export type ToolOutcome = { refused?: false; data: Record<string, unknown>; summary: string } | Refusal;

export interface ToolDef {
  name: string;
  title: string;
  description: string;
  input: TObject;
  output: TObject;
  hints: ToolHints;
  run: (args: Record<string, unknown>, api: ApiCall, agent: AgentContext) => Promise<ToolOutcome>;
}

export const READ_ONLY: ToolHints = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

/** The refusal in an API answer, or null when it succeeded. */
export function refusalOf(reply: ApiReply): Refusal | null {
  if (reply.status < 400) return null;
  const data = (reply.body?.data ?? {}) as Record<string, unknown>;
  const { error_code, ...rest } = data;
  return {
    refused: true,
    status: reply.status,
    error_code: typeof error_code === "string" ? error_code : `http_${reply.status}`,
    message: reply.body?.message ?? `HTTP ${reply.status}`,
    data: rest,
  };
}

/** A refusal the tool makes itself, before calling the API (a contact name that matches nobody). */
export function refuse(status: number, error_code: string, message: string, data: Record<string, unknown> = {}): Refusal {
  return { refused: true, status, error_code, message, data };
}

/** The answer's data, or its refusal. */
export async function dataOr(reply: Promise<ApiReply>): Promise<Record<string, unknown> | Refusal> {
  const r = await reply;
  return refusalOf(r) ?? ((r.body?.data ?? {}) as Record<string, unknown>);
}

export const isRefusal = (x: unknown): x is Refusal => typeof x === "object" && x !== null && (x as Refusal).refused === true;

/** The MCP tool result of an outcome. */
export function toolResult(outcome: ToolOutcome) {
  if (outcome.refused) {
    const structured = { error_code: outcome.error_code, message: outcome.message, status: outcome.status, ...outcome.data };
    return {
      isError: true,
      content: [{ type: "text" as const, text: `Refused (${outcome.error_code}): ${outcome.message}` }],
      structuredContent: structured,
    };
  }
  return {
    content: [{ type: "text" as const, text: `${outcome.summary}\n${JSON.stringify(outcome.data)}` }],
    structuredContent: outcome.data,
  };
}

/** A TypeBox schema as plain JSON Schema (TypeBox's own symbols dropped). */
export function jsonSchema(schema: TObject): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema));
}

/** Headers of a send: the agent's session, and the idempotency key when the agent gave one. */
export function sendHeaders(agent: AgentContext, idempotencyKey: unknown): Record<string, string> {
  const headers: Record<string, string> = { "x-pigeon-agent-session": agent.session };
  if (typeof idempotencyKey === "string" && idempotencyKey.length > 0) headers["idempotency-key"] = idempotencyKey;
  return headers;
}

/** Drops the fields an agent left out, so the API sees only what was asked for. */
export function defined(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined && v !== null));
}
