// Projects are workspaces seen through the API: a key sees only its own.
import { eq, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { workspace } from "../../db/schema";

export type WorkspaceRow = Pick<typeof workspace.$inferSelect, "id" | "name" | "createdAt">;

export function createWorkspaceRepository(db: Db) {
  const own = db
    .select({ id: workspace.id, name: workspace.name, createdAt: workspace.createdAt })
    .from(workspace)
    .where(eq(workspace.id, sql.placeholder("ws")))
    .prepare();
  return {
    /** The projects a key of this workspace can see: the workspace itself. */
    visibleTo: (workspaceId: number): WorkspaceRow[] => own.all({ ws: workspaceId }),
  };
}

export type WorkspaceRepository = ReturnType<typeof createWorkspaceRepository>;
