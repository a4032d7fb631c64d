import type { template } from "./schema";
import { t } from "elysia";
import { Envelope, Pagination } from "../../http/envelope";
import { DELIVERY_TYPES } from "../../core/kinds";
import { choiceOf, IdParam, literalUnion, pageQuery } from "../../http/validation";

const DeliveryTypeSchema = literalUnion(DELIVERY_TYPES);

export const Template = t.Object({
  template_id: t.Integer(),
  template_guid: t.String({ format: "uuid" }),
  user_id: t.Integer({ description: "The owning account; 0 for system templates" }),
  code: t.String({ description: "Short upper-case code, unique in the workspace" }),
  name: t.String(),
  description: t.String(),
  body: t.String({ description: "Variables written {{variable_name}}; chat-app templates use {{1}}, {{2}}, …" }),
  channel: DeliveryTypeSchema,
  is_system: t.Integer({ description: "1 for built-in templates every workspace can use and none can change; 0 for user templates" }),
  status: t.String({ description: "active, disabled; for chat-app templates also the platform's: pending, paused, rejected, …" }),
  variables: t.Array(t.String(), { description: "Variable names in order of first appearance" }),
  language: t.Nullable(t.String()),
  category: t.Nullable(t.String()),
  created_at: t.String({ description: "YYYY-MM-DD HH:MM:SS (UTC)", examples: ["2026-01-15 12:00:00"] }),
  updated_at: t.String({ description: "YYYY-MM-DD HH:MM:SS (UTC)", examples: ["2026-01-15 12:00:00"] }),
});

const Code = t.String({
  pattern: "^[A-Z][A-Z0-9_]{0,31}$",
  description: "1–32 characters: upper-case letters, digits, underscores",
  examples: ["ORDER_READY"],
});
const Body = t.String({ minLength: 1, maxLength: 4096, examples: ["Hi {{name}}, your order {{order_id}} is ready."] });

export const TemplateIdParams = t.Object({ template_id: IdParam("template_id") });

export const TemplateListQuery = t.Object({
  ...pageQuery(20, 100),
  channel: t.Optional(choiceOf(DELIVERY_TYPES, "channel")),
});

export const TemplatePageBody = t.Object({ ...pageQuery(10, 100) });

export const CreateTemplate = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: 200 }),
    body: Body,
    code: t.Optional(Code),
    description: t.Optional(t.String({ maxLength: 1000 })),
    channel: t.Optional(DeliveryTypeSchema),
    language: t.Optional(t.String({ minLength: 2, maxLength: 16, description: "Chat-app templates: the language code, default en_US" })),
  },
  {
    examples: [
      { name: "Order ready", code: "ORDER_READY", body: "Hi {{name}}, your order {{order_id}} is ready.", description: "Pickup notice" },
    ],
  },
);

export const UpdateTemplate = t.Object({
  template_id: t.Integer({ minimum: 1 }),
  name: t.Optional(t.String({ minLength: 1, maxLength: 200 })),
  body: t.Optional(Body),
  code: t.Optional(Code),
  description: t.Optional(t.String({ maxLength: 1000 })),
  status: t.Optional(t.Union([t.Literal("active"), t.Literal("disabled")])),
});

export const TemplateIdBody = t.Object({ template_id: t.Integer({ minimum: 1 }) });

export const TemplateResponse = Envelope(Template);
export const TemplateListResponse = Envelope(t.Object({ templates: t.Array(Template), pagination: Pagination }));
export const TemplateArrayResponse = Envelope(t.Array(Template));
export const TemplateDeletedResponse = Envelope(t.Object({ template_id: t.Integer(), deleted: t.Boolean() }));

/** A template as the domain sees it: the schema's record. */
export type TemplateRow = typeof template.$inferSelect;
