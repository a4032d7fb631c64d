// A send's text: the template it names (or its `message`), rendered with its variables, the
// account's length cap, and the segments it is counted in.
import type { AuthContext } from "../../core/caller";
import { AppError } from "../../core/errors";
import type { DeliveryType } from "../../core/kinds";
import { countSegments } from "../../lib/segments";
import type { TemplateRow } from "../templates/model";
import { checkVariables, renderTemplate, type SuppliedVariables } from "../templates/variables";
import type { SendingContext } from "./context";

/** The segments a message is counted in on a delivery type: SMS by its text, anything else as one. */
export const segmentsOf = (channel: DeliveryType, message: string): number => (channel === "sms" ? countSegments(message).segments : 1);

export function createContent(ctx: SendingContext) {
  const { templates } = ctx.deps;

  async function resolveTemplate(workspaceId: number, ref: string | number, channel: DeliveryType): Promise<TemplateRow> {
    const text = String(ref).trim();
    let row: TemplateRow | null = null;
    if (/^\d+$/.test(text)) row = await templates.get(workspaceId, Number(text));
    else if (text) row = await templates.visibleByCode(workspaceId, text);
    if (!row) throw new AppError("not_found", `template ${text || "(empty)"} not found`, { field: "template_id" });
    if (row.channel !== channel) {
      throw new AppError("validation_error", `template ${row.id} is a ${row.channel} template and cannot be sent as ${channel}`, {
        field: "template_id",
        location: "body",
        reason: `must be a ${channel} template`,
      });
    }
    if (row.status !== "active") {
      // A template its provider paused or disabled answers with the provider's own code, where it has one.
      const platformCode = ctx.inactiveTemplateCodes[channel]?.[row.status];
      throw new AppError(
        "template_inactive",
        `template ${row.id} is ${row.status} and cannot be sent`,
        { template_id: row.id, status: row.status },
        platformCode,
      );
    }
    return row;
  }

  /** The text a template or `message` makes, for one channel. */
  async function contentFor(
    auth: AuthContext,
    channel: DeliveryType,
    templateRef: string | number | null | undefined,
    variables: SuppliedVariables | undefined,
    message: unknown,
  ) {
    const hasTemplate = templateRef !== undefined && templateRef !== null && String(templateRef).trim() !== "";
    if (hasTemplate) {
      const template = await resolveTemplate(auth.workspaceId, templateRef!, channel);
      const templateVars = checkVariables(template.id, template.variables, template.channel, variables);
      return { template, templateVars, message: renderTemplate(template.body, templateVars) };
    }
    if (typeof message !== "string" || message.trim() === "") {
      throw new AppError("message_required", "message is required unless template_id is set", { field: "message" });
    }
    return { template: null, templateVars: null, message };
  }

  function checkLength(auth: AuthContext, channel: DeliveryType, message: string) {
    const length = [...message].length;
    if (channel === "sms" && length > auth.smsLengthCap) {
      throw new AppError("message_too_long", `Message is ${length} characters; the account's cap is ${auth.smsLengthCap} characters`, {
        cap: auth.smsLengthCap,
        length,
      });
    }
  }

  return { resolveTemplate, contentFor, checkLength };
}

export type Content = ReturnType<typeof createContent>;
