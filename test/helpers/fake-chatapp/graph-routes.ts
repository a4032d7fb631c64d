// The Graph API's read side: token introspection, business accounts, their phone numbers and
// their templates (paged by cursor and absolute URL, as Graph pages).
import { graphParamError, json, unsupportedObject } from "./errors";
import type { Json } from "./openapi";
import type { Caller, Store } from "./store";
import type { FakePhoneNumber, FakeWaba } from "./types";

/** Top-level names of a Graph `fields` list: "name,components{type},status" → name, components, status. */
function topLevelFields(fields: string): string[] {
  const names: string[] = [];
  let depth = 0;
  let current = "";
  for (const ch of fields) {
    if (ch === "{") depth++;
    if (ch === "}") depth--;
    if (ch === "," && depth === 0) {
      names.push(current);
      current = "";
    } else if (depth === 0 && ch !== "}") current += ch;
  }
  names.push(current);
  return names.map((n) => n.replace(/\..*$/, "").trim()).filter(Boolean);
}

function pickFields(object: Json, fields: string | null): Json {
  if (!fields) return object;
  const wanted = new Set(["id", ...topLevelFields(fields)]);
  return Object.fromEntries(Object.entries(object).filter(([key]) => wanted.has(key)));
}

const cursorOf = (id: string) => Buffer.from(`tpl:${id}`).toString("base64url");
const idOfCursor = (cursor: string) => Buffer.from(cursor, "base64url").toString().replace(/^tpl:/, "");

export function createGraphRoutes(store: Store) {
  const { tokens, wabas, phones } = store;

  function debugToken(url: URL): Response {
    const input = url.searchParams.get("input_token");
    if (!input) return graphParamError("The parameter input_token is required");
    const record = tokens.get(input);
    if (record?.state !== "valid") {
      return json(200, { data: { error: { code: 190, message: "Invalid OAuth access token." }, is_valid: false, scopes: [] } });
    }
    const targetIds = record.wabaIds === "all" ? [...wabas.keys()] : record.wabaIds.filter((id) => wabas.has(id));
    return json(200, {
      data: {
        app_id: "1000000000000001",
        type: "SYSTEM_USER",
        application: "Pigeon (fake)",
        data_access_expires_at: 0,
        expires_at: 0,
        is_valid: true,
        scopes: ["whatsapp_business_management", "whatsapp_business_messaging", "public_profile"],
        granular_scopes: [
          { scope: "whatsapp_business_management", target_ids: targetIds },
          { scope: "whatsapp_business_messaging", target_ids: targetIds },
        ],
        user_id: "2000000000000002",
      },
    });
  }

  function wabaObject(waba: FakeWaba): Json {
    return {
      id: waba.id,
      name: waba.name,
      currency: waba.currency,
      timezone_id: waba.timezone_id,
      message_template_namespace: waba.message_template_namespace,
      account_review_status: "APPROVED",
    };
  }

  function phoneObject(phone: FakePhoneNumber): Json {
    return { code_verification_status: "VERIFIED", platform_type: "CLOUD_API", throughput: { level: "STANDARD" }, ...phone };
  }

  function listTemplates(url: URL, version: string, waba: FakeWaba): Response {
    const limit = Math.max(1, Math.min(1000, Number(url.searchParams.get("limit") ?? 25) || 25));
    const status = url.searchParams.get("status")?.toUpperCase();
    const name = url.searchParams.get("name");
    const all = waba.templates.filter((t) => (!status || t.status === status) && (!name || t.name.includes(name)));
    const after = url.searchParams.get("after");
    const before = url.searchParams.get("before");
    let start = 0;
    if (after) start = all.findIndex((t) => t.id === idOfCursor(after)) + 1;
    else if (before) start = Math.max(0, all.findIndex((t) => t.id === idOfCursor(before)) - limit);
    const page = all.slice(start, start + limit);
    const fields = url.searchParams.get("fields");
    const body: Json = { data: page.map((t) => pickFields({ ...t }, fields)) };
    if (page.length > 0) {
      const paging: Json = { cursors: { before: cursorOf(page[0].id), after: cursorOf(page[page.length - 1].id) } };
      const link = (key: "after" | "before", cursor: string) => {
        const query = new URLSearchParams(url.searchParams);
        query.delete("after");
        query.delete("before");
        query.set("limit", String(limit));
        query.set(key, cursor);
        return `${url.origin}/${version}/${waba.id}/message_templates?${query}`;
      };
      // Graph omits `next` on the last page; adapters must stop there rather than on an empty page.
      if (start + limit < all.length) paging.next = link("after", cursorOf(page[page.length - 1].id));
      if (start > 0) paging.previous = link("before", cursorOf(page[0].id));
      body.paging = paging;
    }
    return json(200, body);
  }

  function handleGraphGet(url: URL, version: string, segments: string[], caller: Caller): Response {
    const [id, edge, ...rest] = segments;
    if (rest.length > 0) return graphParamError("Unknown path components");
    if (id === "debug_token" && !edge) return debugToken(url);
    const waba = wabas.get(id);
    if (waba && caller.sees(waba.id)) {
      if (!edge) return json(200, pickFields(wabaObject(waba), url.searchParams.get("fields")));
      if (edge === "phone_numbers") {
        const data = waba.phoneNumbers.map((p) => pickFields(phoneObject(p), url.searchParams.get("fields")));
        const paging = data.length
          ? { cursors: { before: cursorOf(waba.phoneNumbers[0].id), after: cursorOf(waba.phoneNumbers[data.length - 1].id) } }
          : undefined;
        return json(200, paging ? { data, paging } : { data });
      }
      if (edge === "message_templates") return listTemplates(url, version, waba);
      return graphParamError(`Tried accessing nonexisting field (${edge}) on node type (WhatsAppBusinessAccount)`);
    }
    const phone = phones.get(id);
    if (phone && caller.sees(phone.wabaId) && !edge) return json(200, pickFields(phoneObject(phone.phone), url.searchParams.get("fields")));
    return unsupportedObject("GET", id);
  }

  return { handleGraphGet };
}
