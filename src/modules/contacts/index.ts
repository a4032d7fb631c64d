// The contacts module: its repository (safe sending reads a contact's time zone) and its service,
// built here once.
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import { createContactRepository } from "./repository";
import { createContactService } from "./service";
import type { ModuleDescriptor } from "../../services-type";
import { contactRoutes } from "./routes";

export function createContactsModule(deps: { storage: Storage; clock: Clock; optOutOf: Parameters<typeof createContactService>[3] }) {
  const repository = createContactRepository(deps.storage);
  return {
    /** A contact's id and time zone by phone, or null: what safe sending needs of contacts. */
    async contactOf(workspaceId: number, phone: string) {
      const row = await repository.byPhone(workspaceId, phone);
      return row ? { id: row.id, timezone: row.timezone } : null;
    },
    /** The tags of the contact with this number, or null when there is none (a key's recipient policy). */
    tagsOf: async (workspaceId: number, phone: string) => {
      const row = await repository.byPhone(workspaceId, phone);
      return row ? (row.tags ?? []) : null;
    },
    /** The name of the contact with this number, or null. */
    nameOf: async (workspaceId: number, phone: string) => (await repository.byPhone(workspaceId, phone))?.name ?? null,
    service: createContactService(deps.storage, repository, deps.clock, deps.optOutOf),
  };
}

export const contactsModule: ModuleDescriptor = { name: "contacts", routes: (s) => ({ api: [contactRoutes(s)] }) };
