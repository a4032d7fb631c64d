// Which chat-app template a verification's code goes in: one of the workspace's that may carry a
// code (on the chat-app channel, approved, in the authentication category). The one a service
// names, else the first such.
import type { DeliveryType } from "../../core/kinds";
import { VERIFY_CHANNELS } from "./service";

/** What Verify reads of a template. */
export interface TemplateFacts {
  id: number;
  channel: string;
  status: string;
  category: string | null;
  variables: string[];
}

/** The workspace's templates, as Verify needs them: one by id, or those of a channel. */
export interface VerifyTemplates {
  get(workspaceId: number, id: number): Promise<TemplateFacts | null>;
  ofChannel(workspaceId: number, channel: DeliveryType): Promise<TemplateFacts[]>;
}

const carriesCode = (t: TemplateFacts | null): t is TemplateFacts =>
  t !== null && t.channel === VERIFY_CHANNELS.whatsapp && t.status === "active" && t.category === "AUTHENTICATION";

/** The template a code goes in (`id`'s, or the first usable when null), with its variable names; null when none may carry one. */
export async function authTemplate(templates: VerifyTemplates, workspaceId: number, id: number | null) {
  const candidates =
    id !== null ? [await templates.get(workspaceId, id)] : await templates.ofChannel(workspaceId, VERIFY_CHANNELS.whatsapp);
  const usable = candidates.find(carriesCode);
  return usable ? { id: usable.id, variables: usable.variables } : null;
}
