import { Elysia } from "elysia";
import { declaredAuth } from "../../http/declared-auth";
import { errorResponses, models, ok } from "../../http/envelope";
import type { Services } from "../../services-type";
import {
  CreateTemplate,
  TemplateArrayResponse,
  TemplateDeletedResponse,
  TemplateIdBody,
  TemplateIdParams,
  TemplateListQuery,
  TemplateListResponse,
  TemplatePageBody,
  TemplateResponse,
  UpdateTemplate,
} from "./model";

const RULES =
  "Variables are written `{{name}}`: names hold only letters, digits and underscores and are case-sensitive. " +
  "Chat-app templates use numbered placeholders `{{1}}` … `{{n}}` without gaps. A body that breaks a rule: 400 `invalid_template_body`. " +
  "An SMS body longer than the account's cap: 400 `message_too_long`.";

/** What these routes use of the services. */
export type TemplateRoutesDeps = Pick<Services, "templates">;

export function templateRoutes(s: TemplateRoutesDeps) {
  const { templates } = s;
  return new Elysia({ tags: ["Templates"] })
    .use(declaredAuth())
    .use(models)
    .get("/v1/api/template/list", async ({ auth, query }) => ok(await templates.list(auth.workspaceId, query), "Templates fetched"), {
      query: TemplateListQuery,
      response: { 200: TemplateListResponse, ...errorResponses() },
      auth: "apiKey",
      scope: "templates",
      detail: {
        operationId: "listTemplates",
        summary: "List templates",
        description: "The workspace's templates and the system templates, optionally of one channel.",
      },
    })
    .post("/v1/api/template/create", async ({ auth, body }) => ok(await templates.create(auth, body), "Template created"), {
      parse: "json",
      body: CreateTemplate,
      response: { 200: TemplateResponse, ...errorResponses(409) },
      auth: "apiKey",
      scope: "templates",
      detail: {
        operationId: "createTemplate",
        summary: "Create a template",
        description: `${RULES} \`code\` defaults to one made from the name; a code already used in the workspace: 409 \`duplicate_template_code\`. \`channel\` defaults to \`sms\`.`,
      },
    })
    .post("/v1/api/template/update", async ({ auth, body }) => ok(await templates.update(auth, body), "Template updated"), {
      parse: "json",
      body: UpdateTemplate,
      response: { 200: TemplateResponse, ...errorResponses(404, 409) },
      auth: "apiKey",
      scope: "templates",
      detail: {
        operationId: "updateTemplate",
        summary: "Update a template",
        description: `${RULES} System templates cannot be changed: 403 \`template_read_only\`. \`status\` can be set to \`active\` or \`disabled\`.`,
      },
    })
    .post(
      "/v1/api/template/delete",
      async ({ auth, body }) => ok(await templates.remove(auth.workspaceId, body.template_id), "Template deleted"),
      {
        parse: "json",
        body: TemplateIdBody,
        response: { 200: TemplateDeletedResponse, ...errorResponses(404) },
        auth: "apiKey",
        scope: "templates",
        detail: {
          operationId: "deleteTemplate",
          summary: "Delete a template",
          description: "System templates cannot be deleted: 403 `template_read_only`. Notifications sent with it keep their template_id.",
        },
      },
    )
    .get(
      "/v1/api/template/:template_id",
      async ({ auth, params }) => ok(templates.present(await templates.require(auth.workspaceId, params.template_id)), "Template fetched"),
      {
        params: TemplateIdParams,
        response: { 200: TemplateResponse, ...errorResponses(404) },
        auth: "apiKey",
        scope: "templates",
        detail: { operationId: "getTemplate", summary: "Get a template" },
      },
    )
    .post(
      "/v1/notification/template/api/get",
      async ({ auth, body, set }) => {
        const result = await templates.list(auth.workspaceId, { page: body.page ?? 1, limit: body.limit ?? 10 });
        set.headers["x-total-count"] = String(result.pagination.total);
        return ok(result.templates, "Templates fetched successfully");
      },
      {
        parse: "json",
        body: TemplatePageBody,
        response: { 200: TemplateArrayResponse, ...errorResponses() },
        auth: "apiKey",
        scope: "templates",
        detail: {
          operationId: "pageTemplates",
          summary: "Fetch templates (array)",
          description:
            "`data` is the array of templates itself. `page` defaults to 1, `limit` to 10 (at most 100). The total is in the `X-Total-Count` header.",
        },
      },
    );
}
