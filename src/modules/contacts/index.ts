// The contacts module: its repository (safe sending reads a contact's time zone) and its service,
// built here once.
import type { Clock } from "../../clock";
import type { Db } from "../../db/client";
import { createContactRepository } from "./repository";
import { createContactService } from "./service";

export function createContactsModule(deps: { db: Db; clock: Clock; optOutOf: Parameters<typeof createContactService>[2] }) {
  const repository = createContactRepository(deps.db);
  return {
    /** A contact's id and time zone by phone, or null: what safe sending needs of contacts. */
    contactOf(workspaceId: number, phone: string) {
      const row = repository.byPhone(workspaceId, phone);
      return row ? { id: row.id, timezone: row.timezone } : null;
    },
    service: createContactService(repository, deps.clock, deps.optOutOf),
  };
}
