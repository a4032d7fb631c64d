// The overview's REST-style paths, as thin aliases over the contact and template services.
import { Elysia, t } from "elysia";
import { declaredAuth } from "../../http/declared-auth";
import { errorResponses, models, ok } from "../../http/envelope";
import type { Services } from "../../services-type";
import {
  ContactDeletedResponse,
  ContactIdParams,
  ContactListQuery,
  ContactListResponse,
  ContactResponse,
  CreateContact,
} from "../contacts/model";
import { TemplateListQuery, TemplateListResponse } from "../templates/model";

const UpdateContactFields = t.Object({
  name: t.Optional(t.String({ minLength: 1, maxLength: 200 })),
  phone: t.Optional(t.String({ minLength: 1, maxLength: 32 })),
  email: t.Optional(t.Nullable(t.String({ maxLength: 254 }))),
  type: t.Optional(t.Nullable(t.String({ maxLength: 64 }))),
});

/** What these routes use of the services. */
export type OverviewRoutesDeps = Pick<Services, "contacts" | "templates">;

export function overviewRoutes(s: OverviewRoutesDeps) {
  const { contacts, templates } = s;
  return new Elysia({ prefix: "/v1", tags: ["Overview aliases"] })
    .use(declaredAuth())
    .use(models)
    .get("/contacts", async ({ auth, query }) => ok(await contacts.list(auth.workspaceId, query.page, query.limit), "Contacts fetched"), {
      query: ContactListQuery,
      response: { 200: ContactListResponse, ...errorResponses() },
      auth: "apiKey",
      scope: "contacts",
      detail: {
        operationId: "listContactsOverview",
        summary: "List contacts (overview form)",
        description: "Alias of GET /api/contact/list.",
      },
    })
    .post("/contacts", async ({ auth, body }) => ok(await contacts.create(auth.workspaceId, body), "Contact created"), {
      parse: "json",
      body: CreateContact,
      response: { 200: ContactResponse, ...errorResponses(409) },
      auth: "apiKey",
      scope: "contacts",
      detail: {
        operationId: "createContactOverview",
        summary: "Create a contact (overview form)",
        description: "Alias of POST /api/contact/create.",
      },
    })
    .put(
      "/contacts/:contact_id",
      async ({ auth, params, body }) =>
        ok(await contacts.update(auth.workspaceId, { ...body, contact_id: params.contact_id }), "Contact updated"),
      {
        parse: "json",
        params: ContactIdParams,
        body: UpdateContactFields,
        response: { 200: ContactResponse, ...errorResponses(404, 409) },
        auth: "apiKey",
        scope: "contacts",
        detail: {
          operationId: "replaceContactOverview",
          summary: "Update a contact (overview form)",
          description: "Alias of POST /api/contact/update with the id in the path.",
        },
      },
    )
    .delete(
      "/contacts/:contact_id",
      async ({ auth, params }) => ok(await contacts.remove(auth.workspaceId, params.contact_id), "Contact deleted"),
      {
        params: ContactIdParams,
        response: { 200: ContactDeletedResponse, ...errorResponses(404) },
        auth: "apiKey",
        scope: "contacts",
        detail: {
          operationId: "deleteContactOverview",
          summary: "Delete a contact (overview form)",
          description: "Alias of POST /api/contact/delete.",
        },
      },
    )
    .get("/templates", async ({ auth, query }) => ok(await templates.list(auth.workspaceId, query), "Templates fetched"), {
      query: TemplateListQuery,
      response: { 200: TemplateListResponse, ...errorResponses() },
      auth: "apiKey",
      scope: "templates",
      detail: {
        operationId: "listTemplatesOverview",
        summary: "List templates (overview form)",
        description: "Alias of GET /api/template/list.",
      },
    });
}
