// Contact rules: E.164 phones, valid emails, one contact per phone in a workspace.
import type { Clock } from "../../clock";
import { AppError } from "../../http/errors";
import { toE164 } from "../../lib/phone";
import { requireTimeZone } from "../../lib/schedule";
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
  repo: ContactRepository,
  clock: Clock,
  optOutOf: (workspaceId: number, phone: string) => { opted_out: boolean; opted_out_at: string | null },
) {
  let typeCache: ContactTypeRow[] | null = null;
  const types = () => (typeCache ??= repo.types());

  function typeOf(id: number | null): ContactTypeRow | null {
    return id === null ? null : (types().find((t) => t.id === id) ?? null);
  }

  function resolveType(ref: string): number {
    const key = ref.trim().toLowerCase();
    const found = types().find((t) => t.code === key || t.name.toLowerCase() === key);
    if (!found) {
      throw new AppError(
        "validation_error",
        `Invalid body field 'type': unknown contact type "${ref}"; one of ${types()
          .map((t) => t.code)
          .join(", ")}`,
        {
          field: "type",
          location: "body",
          reason: "unknown contact type",
        },
      );
    }
    return found.id;
  }

  function present(row: ContactRow) {
    const type = typeOf(row.typeId);
    return {
      contact_id: row.id,
      name: row.name,
      phone: row.phone,
      email: row.email,
      type: type?.code ?? null,
      type_id: row.typeId,
      timezone: row.timezone,
      ...pick(optOutOf(row.workspaceId, row.phone)),
      created_at: iso(row.createdAt),
      updated_at: iso(row.updatedAt),
    };
  }

  function require(workspaceId: number, id: number): ContactRow {
    const row = repo.get(workspaceId, id);
    if (!row) throw new AppError("not_found", `contact ${id} not found`);
    return row;
  }

  function assertPhoneFree(workspaceId: number, phone: string, exceptId?: number) {
    const existing = repo.byPhone(workspaceId, phone);
    if (existing && existing.id !== exceptId) {
      throw new AppError("duplicate_contact", `A contact with phone ${phone} already exists (contact ${existing.id})`, {
        contact_id: existing.id,
      });
    }
  }

  function paged(result: { rows: ContactRow[]; total: number }, page: number, limit: number) {
    return { contacts: result.rows.map(present), pagination: { page, limit, total: result.total } };
  }

  return {
    present,
    require,
    types: () => ({ types: types().map((t) => ({ type_id: t.id, code: t.code, name: t.name, description: t.description })) }),

    list(workspaceId: number, page = 1, limit = 20) {
      return paged(repo.list(workspaceId, (page - 1) * limit, limit), page, limit);
    },

    search(workspaceId: number, query: string, page = 1, limit = 20) {
      const q = query.trim();
      if (!q)
        throw new AppError("validation_error", "Invalid body field 'query': must not be blank", {
          field: "query",
          location: "body",
          reason: "must not be blank",
        });
      return paged(repo.search(workspaceId, q, (page - 1) * limit, limit), page, limit);
    },

    create(workspaceId: number, input: { name: string; phone: string; email?: string; type?: string; timezone?: string | null }) {
      const name = requireName(input.name);
      const phone = requirePhone(input.phone);
      const email = input.email === undefined || input.email.trim() === "" ? null : requireEmail(input.email);
      const typeId = input.type === undefined ? null : resolveType(input.type);
      const timezone = requireTimezone(input.timezone ?? null);
      assertPhoneFree(workspaceId, phone);
      const now = clock.now();
      try {
        return present(repo.insert({ workspaceId, name, phone, email, typeId, timezone, createdAt: now, updatedAt: now }));
      } catch (error) {
        // Two creates racing for one phone: the unique index decides.
        if (String(error).includes("UNIQUE")) assertPhoneFree(workspaceId, phone);
        throw error;
      }
    },

    update(
      workspaceId: number,
      input: { contact_id: number; name?: string; phone?: string; email?: string | null; type?: string | null; timezone?: string | null },
    ) {
      const current = require(workspaceId, input.contact_id);
      const set: Partial<ContactRow> = { updatedAt: clock.now() };
      if (input.name !== undefined) set.name = requireName(input.name);
      if (input.phone !== undefined) {
        set.phone = requirePhone(input.phone);
        assertPhoneFree(workspaceId, set.phone, current.id);
      }
      if (input.email !== undefined) set.email = input.email === null || input.email.trim() === "" ? null : requireEmail(input.email);
      if (input.type !== undefined) set.typeId = input.type === null ? null : resolveType(input.type);
      if (input.timezone !== undefined) set.timezone = requireTimezone(input.timezone);
      return present(repo.update(workspaceId, current.id, set)!);
    },

    remove(workspaceId: number, id: number) {
      if (!repo.delete(workspaceId, id)) throw new AppError("not_found", `contact ${id} not found`);
      return { contact_id: id, deleted: true };
    },
  };
}

export type ContactService = ReturnType<typeof createContactService>;
