// Template rules: codes, variable syntax per channel (checked at create and update), and that
// system templates are read-only.
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import type { AuthContext } from "../../core/caller";
import { AppError } from "../../core/errors";
import { sqlTime } from "../../lib/time";
import { uuid } from "../../lib/tokens";
import type { TemplateRepository } from "./repository";
import type { TemplateRow } from "./model";
import type { DeliveryType } from "../../core/kinds";
import { parseTemplateBody } from "./variables";

const CHATAPP_BODY_MAX = 1024;

function codeFromName(name: string): string {
  const code = name
    .toUpperCase()
    .replace(/[^A-Z0-9]+/g, "_")
    .replace(/^[_0-9]+|_+$/g, "")
    .slice(0, 28);
  return code || "TEMPLATE";
}

export function createTemplateService(storage: Storage, repo: TemplateRepository, clock: Clock) {
  function present(row: TemplateRow) {
    return {
      template_id: row.id,
      template_guid: row.guid,
      user_id: row.accountId ?? 0,
      code: row.code,
      name: row.name,
      description: row.description,
      body: row.body,
      channel: row.channel,
      is_system: row.isSystem ? 1 : 0,
      status: row.status,
      variables: row.variables,
      language: row.language,
      category: row.category,
      created_at: sqlTime(row.createdAt),
      updated_at: sqlTime(row.updatedAt),
    };
  }

  async function require(workspaceId: number, id: number): Promise<TemplateRow> {
    const row = await repo.get(workspaceId, id);
    if (!row) throw new AppError("not_found", `template ${id} not found`);
    return row;
  }

  async function requireOwn(workspaceId: number, id: number): Promise<TemplateRow> {
    const row = await require(workspaceId, id);
    if (row.isSystem) throw new AppError("template_read_only", `template ${id} is a system template and cannot be changed`);
    return row;
  }

  function checkBody(body: string, channel: DeliveryType, smsCap: number): string[] {
    const cap = channel === "chatapp" ? CHATAPP_BODY_MAX : smsCap;
    if (body.length > cap) {
      throw new AppError("message_too_long", `Template body is ${body.length} characters; the cap is ${cap}`, { cap, length: body.length });
    }
    return parseTemplateBody(body, channel);
  }

  async function uniqueCode(workspaceId: number, base: string): Promise<string> {
    let code = base;
    for (let n = 2; await repo.byCode(workspaceId, code); n++) code = `${base}_${n}`;
    return code;
  }

  async function assertCodeFree(workspaceId: number, code: string, exceptId?: number): Promise<void> {
    const existing = await repo.byCode(workspaceId, code);
    if (existing && existing.id !== exceptId) {
      throw new AppError("duplicate_template_code", `Template code ${code} is already used by template ${existing.id}`, {
        template_id: existing.id,
      });
    }
  }

  async function list(workspaceId: number, q: { page?: number; limit?: number; channel?: DeliveryType }) {
    const page = q.page ?? 1;
    const limit = q.limit ?? 20;
    const { rows, total } = await repo.list(workspaceId, { channel: q.channel, offset: (page - 1) * limit, limit });
    return { templates: rows.map(present), pagination: { page, limit, total } };
  }

  /** Checks the code is free and stores the template, as one unit: two creates cannot take one code. */
  function create(
    auth: AuthContext,
    input: { name: string; body: string; code?: string; description?: string; channel?: DeliveryType; language?: string },
  ) {
    const channel = input.channel ?? "sms";
    const variables = checkBody(input.body, channel, auth.smsLengthCap);
    return storage.transaction(async () => {
      let code: string;
      if (input.code !== undefined) {
        await assertCodeFree(auth.workspaceId, input.code);
        code = input.code;
      } else {
        code = await uniqueCode(auth.workspaceId, codeFromName(input.name));
      }
      const now = clock.now();
      return present(
        await repo.insert({
          guid: uuid(),
          workspaceId: auth.workspaceId,
          accountId: auth.accountId,
          code,
          name: input.name.trim(),
          description: input.description ?? "",
          body: input.body,
          channel,
          isSystem: false,
          status: "active",
          variables,
          language: channel === "chatapp" ? (input.language ?? "en_US") : null,
          createdAt: now,
          updatedAt: now,
        }),
      );
    });
  }

  function update(
    auth: AuthContext,
    input: { template_id: number; name?: string; body?: string; code?: string; description?: string; status?: "active" | "disabled" },
  ) {
    return storage.transaction(async () => {
      const row = await requireOwn(auth.workspaceId, input.template_id);
      const set: Partial<TemplateRow> = { updatedAt: clock.now() };
      if (input.body !== undefined) {
        set.variables = checkBody(input.body, row.channel, auth.smsLengthCap);
        set.body = input.body;
      }
      if (input.code !== undefined) {
        await assertCodeFree(auth.workspaceId, input.code, row.id);
        set.code = input.code;
      }
      if (input.name !== undefined) set.name = input.name.trim();
      if (input.description !== undefined) set.description = input.description;
      if (input.status !== undefined) set.status = input.status;
      return present(await repo.update(row.id, set));
    });
  }

  async function remove(workspaceId: number, id: number) {
    const row = await requireOwn(workspaceId, id);
    await repo.update(row.id, { deletedAt: clock.now() });
    return { template_id: id, deleted: true };
  }

  return {
    present,
    require,
    /** A template of the workspace as stored, or null. */
    find: (workspaceId: number, id: number): Promise<TemplateRow | null> => repo.get(workspaceId, id),
    /** A template by id, whoever's (the system templates every workspace may send), or null. */
    findAny: (id: number): Promise<TemplateRow | null> => repo.byId(id),
    /** The workspace's templates as stored, a page of them, with the total. */
    records: (workspaceId: number, q: { channel?: DeliveryType; offset: number; limit: number }) => repo.list(workspaceId, q),
    list,
    create,
    update,
    remove,
  };
}

export type TemplateService = ReturnType<typeof createTemplateService>;
