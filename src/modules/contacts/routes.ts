import { Elysia } from "elysia";
import { errorResponses, models, ok } from "../../http/envelope";
import { authOf } from "../../http/foundation";
import type { Services } from "../../services";
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

export function contactRoutes(s: Services) {
  const { contacts } = s;
  const ws = (request: Request) => authOf(request).workspaceId;
  return new Elysia({ prefix: "/v1/api/contact", tags: ["Contacts"] })
    .use(models)
    .get("/list", ({ request, query }) => ok(contacts.list(ws(request), query.page, query.limit), "Contacts fetched"), {
      query: ContactListQuery,
      response: { 200: ContactListResponse, ...errorResponses() },
      detail: { summary: "List contacts", description: "Oldest first. `limit` defaults to 20, at most 100." },
    })
    .get("/types", () => ok(contacts.types(), "Contact types fetched"), {
      response: { 200: ContactTypesResponse, ...errorResponses() },
      detail: { summary: "List contact types", description: "The types a contact can have; set one with `type` (its code) on create or update." },
    })
    .post("/search", ({ request, body }) => ok(contacts.search(ws(request), body.query, body.page, body.limit), "Contacts found"), {
      parse: "json",
      body: SearchContacts,
      response: { 200: ContactListResponse, ...errorResponses() },
      detail: {
        summary: "Search contacts",
        description: "Case-insensitive substring match on name, phone or email; digits also match phones written with spaces or brackets (\"415 555\" finds +14155552671).",
      },
    })
    .post("/create", ({ request, body }) => ok(contacts.create(ws(request), body), "Contact created"), {
      parse: "json",
      body: CreateContact,
      response: { 200: ContactResponse, ...errorResponses(409) },
      detail: {
        summary: "Create a contact",
        description:
          "`phone` must be E.164 (400 `invalid_phone_number`, message contains \"Invalid phone number\"); it is stored normalised. " +
          "`email` must be valid (400 `invalid_email`). A phone that another contact of the workspace has: 409 `duplicate_contact`.",
      },
    })
    .post("/update", ({ request, body }) => ok(contacts.update(ws(request), body), "Contact updated"), {
      parse: "json",
      body: UpdateContact,
      response: { 200: ContactResponse, ...errorResponses(404, 409) },
      detail: {
        summary: "Update a contact",
        description: "Changes any of `name`, `phone`, `email`, `type`; fields left out stay as they are. `email: null` or `type: null` clears them.",
      },
    })
    .post("/delete", ({ request, body }) => ok(contacts.remove(ws(request), body.contact_id), "Contact deleted"), {
      parse: "json",
      body: ContactIdBody,
      response: { 200: ContactDeletedResponse, ...errorResponses(404) },
      detail: { summary: "Delete a contact" },
    })
    .get("/:contact_id", ({ request, params }) => ok(contacts.present(contacts.require(ws(request), params.contact_id)), "Contact fetched"), {
      params: ContactIdParams,
      response: { 200: ContactResponse, ...errorResponses(404) },
      detail: { summary: "Get a contact" },
    });
}
