import { Elysia } from "elysia";
import { declaredAuth } from "../../http/declared-auth";
import { errorResponses, models, ok } from "../../http/envelope";
import type { Services } from "../../services-type";
import {
  ContactDeletedResponse,
  ContactIdBody,
  ContactIdParams,
  ContactListQuery,
  ContactListResponse,
  ContactResponse,
  ContactTypesResponse,
  CreateContact,
  SearchContacts,
  UpdateContact,
} from "./model";

/** What these routes use of the services. */
export type ContactRoutesDeps = Pick<Services, "contacts">;

export function contactRoutes(s: ContactRoutesDeps) {
  const { contacts } = s;
  return new Elysia({ prefix: "/v1/api/contact", tags: ["Contacts"] })
    .use(declaredAuth())
    .use(models)
    .get(
      "/list",
      async ({ auth, query }) => ok(await contacts.list(auth.workspaceId, query.page, query.limit, query.tag), "Contacts fetched"),
      {
        query: ContactListQuery,
        response: { 200: ContactListResponse, ...errorResponses() },
        auth: "apiKey",
        scope: "contacts",
        detail: {
          operationId: "listContacts",
          summary: "List contacts",
          description: "Oldest first. `limit` defaults to 20, at most 100. `tag` keeps the contacts with that tag.",
        },
      },
    )
    .get("/types", async () => ok(await contacts.types(), "Contact types fetched"), {
      response: { 200: ContactTypesResponse, ...errorResponses() },
      auth: "apiKey",
      scope: "contacts",
      detail: {
        operationId: "listContactTypes",
        summary: "List contact types",
        description: "The types a contact can have; set one with `type` (its code) on create or update.",
      },
    })
    .post(
      "/search",
      async ({ auth, body }) => ok(await contacts.search(auth.workspaceId, body.query, body.page, body.limit), "Contacts found"),
      {
        parse: "json",
        body: SearchContacts,
        response: { 200: ContactListResponse, ...errorResponses() },
        auth: "apiKey",
        scope: "contacts",
        detail: {
          operationId: "searchContacts",
          summary: "Search contacts",
          description:
            'Case-insensitive substring match on name, phone or email; digits also match phones written with spaces or brackets ("415 555" finds +14155552671).',
        },
      },
    )
    .post("/create", async ({ auth, body }) => ok(await contacts.create(auth.workspaceId, body), "Contact created"), {
      parse: "json",
      body: CreateContact,
      response: { 200: ContactResponse, ...errorResponses(409) },
      auth: "apiKey",
      scope: "contacts",
      detail: {
        operationId: "createContact",
        summary: "Create a contact",
        description:
          '`phone` must be E.164 (400 `invalid_phone_number`, message contains "Invalid phone number"); it is stored normalised. ' +
          "`email` must be valid (400 `invalid_email`). A phone that another contact of the workspace has: 409 `duplicate_contact`.",
      },
    })
    .post("/update", async ({ auth, body }) => ok(await contacts.update(auth.workspaceId, body), "Contact updated"), {
      parse: "json",
      body: UpdateContact,
      response: { 200: ContactResponse, ...errorResponses(404, 409) },
      auth: "apiKey",
      scope: "contacts",
      detail: {
        operationId: "updateContact",
        summary: "Update a contact",
        description:
          "Changes any of `name`, `phone`, `email`, `type`, `timezone`, `tags` (the whole list); fields left out stay as they are. `email: null`, `type: null` or `timezone: null` clears them. " +
          "`timezone` (an IANA name) is the zone quiet hours are read in for this contact.",
      },
    })
    .post("/delete", async ({ auth, body }) => ok(await contacts.remove(auth.workspaceId, body.contact_id), "Contact deleted"), {
      parse: "json",
      body: ContactIdBody,
      response: { 200: ContactDeletedResponse, ...errorResponses(404) },
      auth: "apiKey",
      scope: "contacts",
      detail: { operationId: "deleteContact", summary: "Delete a contact" },
    })
    .get(
      "/:contact_id",
      async ({ auth, params }) =>
        ok(await contacts.present(await contacts.require(auth.workspaceId, params.contact_id)), "Contact fetched"),
      {
        params: ContactIdParams,
        response: { 200: ContactResponse, ...errorResponses(404) },
        auth: "apiKey",
        scope: "contacts",
        detail: { operationId: "getContact", summary: "Get a contact" },
      },
    );
}
