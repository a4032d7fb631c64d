// Contact rules: E.164 phones, valid emails, one contact per phone in a workspace.
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import { AppError } from "../../core/errors";
import { toE164 } from "../../lib/phone";
import { requireTimeZone } from "../../core/schedule";
import { iso } from "../../lib/time";
import type { ContactRepository, ContactRow, ContactTypeRow } from "./repository";

const pick = ({ opted_out, opted_out_at }: { opted_out: boolean; opted_out_at: string | null }) => ({ opted_out, opted_out_at });

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export function requirePhone(input: string, field = "phone"): string {
  const phone = toE164(input);
  if (!phone) {
    throw new AppError("invalid_phone_number", `Invalid phone number "${input}": ${field} must be E.164, e.g. +14155552671`, { field });
  }
  return phone;
}

function requireEmail(input: string): string {
  const email = input.trim();
  if (!EMAIL.test(email)) throw new AppError("invalid_email", `Invalid email address "${input}"`, { field: "email" });
  return email;
}

function requireName(input: string): string {
  const name = input.trim();
  if (!name)
    throw new AppError("validation_error", "Invalid body field 'name': must not be blank", {
      field: "name",
      location: "body",
      reason: "must not be blank",
    });
  return name;
}

/** Tags as stored: trimmed, lower-cased, each once, in the order given. */
export function normaliseTags(input: readonly string[], field = "tags"): string[] {
  const tags = [...new Set(input.map((t) => t.trim().toLowerCase()).filter((t) => t !== ""))];
  const bad = tags.find((t) => !TAG.test(t));
  if (bad !== undefined)
    throw new AppError("validation_error", `Invalid body field '${field}': "${bad}" may hold only letters, digits, spaces and _ . : -`, {
      field,
      location: "body",
      reason: "may hold only letters, digits, spaces and _ . : -",
    });
  return tags;
}

const TAG = /^[\p{L}\p{N} _.:-]{1,50}$/u;

/** The contact's zone as given (checked, so quiet hours can read it), or null to clear it. */
function requireTimezone(input: string | null): string | null {
  const zone = input?.trim() || null;
  if (zone !== null) requireTimeZone(zone);
  return zone;
}

/**
 * `optOutOf` tells whether a number has opted out of the workspace's messages (the safe-sending
 * rules own that list; a contact only shows it).
 */
export function createContactService(
  storage: Storage,
  repo: ContactRepository,
  clock: Clock,
  optOutOf: (workspaceId: number, phone: string) => Promise<{ opted_out: boolean; opted_out_at: string | null }>,
) {
  // The contact types are fixed by the migrations: read once.
  let typeCache: ContactTypeRow[] | null = null;
  const types = async () => (typeCache ??= await repo.types());

  async function typeOf(id: number | null): Promise<ContactTypeRow | null> {
    return id === null ? null : ((await types()).find((t) => t.id === id) ?? null);
  }

  async function resolveType(ref: string): Promise<number> {
    const key = ref.trim().toLowerCase();
    const known = await types();
    const found = known.find((t) => t.code === key || t.name.toLowerCase() === key);
    if (!found) {
      throw new AppError(
        "validation_error",
        `Invalid body field 'type': unknown contact type "${ref}"; one of ${known.map((t) => t.code).join(", ")}`,
        {
          field: "type",
          location: "body",
          reason: "unknown contact type",
        },
      );
    }
    return found.id;
  }

  async function present(row: ContactRow) {
    const type = await typeOf(row.typeId);
    return {
      contact_id: row.id,
      name: row.name,
      phone: row.phone,
      email: row.email,
      type: type?.code ?? null,
      type_id: row.typeId,
      timezone: row.timezone,
      tags: row.tags ?? [],
      ...pick(await optOutOf(row.workspaceId, row.phone)),
      created_at: iso(row.createdAt),
      updated_at: iso(row.updatedAt),
    };
  }

  async function require(workspaceId: number, id: number): Promise<ContactRow> {
    const row = await repo.get(workspaceId, id);
    if (!row) throw new AppError("not_found", `contact ${id} not found`);
    return row;
  }

  async function assertPhoneFree(workspaceId: number, phone: string, exceptId?: number): Promise<void> {
    const existing = await repo.byPhone(workspaceId, phone);
    if (existing && existing.id !== exceptId) {
      throw new AppError("duplicate_contact", `A contact with phone ${phone} already exists (contact ${existing.id})`, {
        contact_id: existing.id,
      });
    }
  }

  async function paged(result: { rows: ContactRow[]; total: number }, page: number, limit: number) {
    const contacts = [];
    for (const row of result.rows) contacts.push(await present(row));
    return { contacts, pagination: { page, limit, total: result.total } };
  }

  return {
    present,
    require,
    types: async () => ({ types: (await types()).map((t) => ({ type_id: t.id, code: t.code, name: t.name, description: t.description })) }),

    async list(workspaceId: number, page = 1, limit = 20, tag?: string) {
      const offset = (page - 1) * limit;
      const wanted = tag === undefined ? "" : tag.trim().toLowerCase();
      return paged(
        wanted ? await repo.withTag(workspaceId, wanted, offset, limit) : await repo.list(workspaceId, offset, limit),
        page,
        limit,
      );
    },

    /**
     * Gives the contact with this number a tag, creating the contact (named `name`, else the
     * number) when there is none; true when something changed. Inside the caller's unit.
     */
    async addTag(workspaceId: number, phone: string, tag: string, name: string | null): Promise<boolean> {
      const [wanted] = normaliseTags([tag]);
      const now = clock.now();
      const row = await repo.byPhone(workspaceId, phone);
      if (!row) {
        await repo.insert({ workspaceId, name: name?.trim() || phone, phone, tags: [wanted], createdAt: now, updatedAt: now });
        return true;
      }
      if ((row.tags ?? []).includes(wanted)) return false;
      await repo.update(workspaceId, row.id, { tags: [...(row.tags ?? []), wanted], updatedAt: now });
      return true;
    },

    async search(workspaceId: number, query: string, page = 1, limit = 20) {
      const q = query.trim();
      if (!q)
        throw new AppError("validation_error", "Invalid body field 'query': must not be blank", {
          field: "query",
          location: "body",
          reason: "must not be blank",
        });
      return paged(await repo.search(workspaceId, q, (page - 1) * limit, limit), page, limit);
    },

    async create(
      workspaceId: number,
      input: { name: string; phone: string; email?: string; type?: string; timezone?: string | null; tags?: string[] },
    ) {
      const name = requireName(input.name);
      const phone = requirePhone(input.phone);
      const email = input.email === undefined || input.email.trim() === "" ? null : requireEmail(input.email);
      const typeId = input.type === undefined ? null : await resolveType(input.type);
      const timezone = requireTimezone(input.timezone ?? null);
      // The check and the insert as one unit: two creates cannot both take one phone.
      const row = await storage.transaction(async () => {
        await assertPhoneFree(workspaceId, phone);
        const now = clock.now();
        return repo.insert({
          workspaceId,
          name,
          phone,
          email,
          typeId,
          timezone,
          tags: normaliseTags(input.tags ?? []),
          createdAt: now,
          updatedAt: now,
        });
      });
      return present(row);
    },

    async update(
      workspaceId: number,
      input: {
        contact_id: number;
        name?: string;
        phone?: string;
        email?: string | null;
        type?: string | null;
        timezone?: string | null;
        tags?: string[];
      },
    ) {
      const current = await require(workspaceId, input.contact_id);
      const set: Partial<ContactRow> = { updatedAt: clock.now() };
      if (input.name !== undefined) set.name = requireName(input.name);
      if (input.phone !== undefined) set.phone = requirePhone(input.phone);
      if (input.email !== undefined) set.email = input.email === null || input.email.trim() === "" ? null : requireEmail(input.email);
      if (input.type !== undefined) set.typeId = input.type === null ? null : await resolveType(input.type);
      if (input.timezone !== undefined) set.timezone = requireTimezone(input.timezone);
      if (input.tags !== undefined) set.tags = normaliseTags(input.tags);
      const row = await storage.transaction(async () => {
        if (set.phone !== undefined) await assertPhoneFree(workspaceId, set.phone, current.id);
        return (await repo.update(workspaceId, current.id, set))!;
      });
      return present(row);
    },

    async remove(workspaceId: number, id: number) {
      if (!(await repo.delete(workspaceId, id))) throw new AppError("not_found", `contact ${id} not found`);
      return { contact_id: id, deleted: true };
    },
  };
}

export type ContactService = ReturnType<typeof createContactService>;
