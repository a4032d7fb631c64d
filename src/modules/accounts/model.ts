// The accounts module's records, as other modules and pages may name them: the schema's rows.
import type { account, apiKey, plan, workspace } from "./schema";

export type PlanRow = typeof plan.$inferSelect;
export type AccountRow = typeof account.$inferSelect;
export type WorkspaceRow = typeof workspace.$inferSelect;
export type ApiKeyRow = typeof apiKey.$inferSelect;
