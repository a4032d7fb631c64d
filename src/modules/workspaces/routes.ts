import { Elysia, t } from "elysia";
import { declaredAuth } from "../../http/declared-auth";
import { Envelope, errorResponses, models, ok } from "../../http/envelope";
import { iso } from "../../lib/time";
import type { Services } from "../../services-type";

const Project = t.Object({
  project_id: t.Integer(),
  name: t.String(),
  created_at: t.String({ format: "date-time" }),
});

/** What these routes use of the services. */
export type WorkspaceRoutesDeps = Pick<Services, "accounts">;

export function workspaceRoutes(s: WorkspaceRoutesDeps) {
  return new Elysia({ prefix: "/v1/api/project", tags: ["Projects"] })
    .use(declaredAuth())
    .use(models)
    .get(
      "/list",
      async ({ auth }) => {
        const rows = await s.accounts.visibleWorkspaces(auth.workspaceId);
        return ok({ projects: rows.map((w) => ({ project_id: w.id, name: w.name, created_at: iso(w.createdAt) })) }, "Projects fetched");
      },
      {
        response: { 200: Envelope(t.Object({ projects: t.Array(Project) })), ...errorResponses() },
        auth: "apiKey",
        scope: null,
        detail: {
          operationId: "listProjects",
          summary: "List projects",
          description:
            "Projects are Pigeon's workspaces. An API key belongs to one workspace and sees only that workspace, so the list holds the key's own project. " +
            "Operators create more with `pigeon workspaces create` and give each its own keys.",
        },
      },
    );
}
