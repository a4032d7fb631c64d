import { Elysia, t } from "elysia";
import { Envelope, errorResponses, models, ok } from "../../http/envelope";
import { authOf } from "../../http/foundation";
import { iso } from "../../lib/time";
import type { Services } from "../../services";
import { createProjectRepository } from "./repository";

const Project = t.Object({
  project_id: t.Integer(),
  name: t.String(),
  created_at: t.String({ format: "date-time" }),
});

export function projectRoutes(s: Services) {
  const projects = createProjectRepository(s.db);
  return new Elysia({ prefix: "/v1/api/project", tags: ["Projects"] }).use(models).get(
    "/list",
    ({ request }) => {
      const rows = projects.visibleTo(authOf(request).workspaceId);
      return ok({ projects: rows.map((w) => ({ project_id: w.id, name: w.name, created_at: iso(w.createdAt) })) }, "Projects fetched");
    },
    {
      response: { 200: Envelope(t.Object({ projects: t.Array(Project) })), ...errorResponses() },
      detail: {
        summary: "List projects",
        description:
          "Projects are Pigeon's workspaces. An API key belongs to one workspace and sees only that workspace, so the list holds the key's own project. " +
          "Operators create more with `pigeon workspaces create` and give each its own keys.",
      },
    },
  );
}
