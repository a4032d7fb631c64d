// The rule and rule_reply queries: a workspace's inbound rules in priority order, and the automatic
// replies they sent to each sender, which the loop protection counts.
import type { Executor } from "../../db/storage";

export interface RuleRow {
  id: number;
  workspaceId: number;
  name: string;
  priority: number;
  enabled: boolean;
  match: Record<string, unknown>;
  channels: string[] | null;
  action: Record<string, unknown>;
  continueAfter: boolean;
  whenHolds: Record<string, unknown> | null;
  replyWindowSeconds: number;
  webhookId: number | null;
  matchedCount: number;
  lastMatchedAt: number | null;
  createdAt: number;
  updatedAt: number;
}

export type RuleFields = Omit<RuleRow, "id" | "workspaceId" | "matchedCount" | "lastMatchedAt" | "createdAt">;

const COLUMNS = `id, workspace_id AS "workspaceId", name, priority, enabled, match, channels, action, continue_after AS "continueAfter",
  when_holds AS "whenHolds", reply_window_seconds AS "replyWindowSeconds", webhook_id AS "webhookId",
  matched_count AS "matchedCount", last_matched_at AS "lastMatchedAt", created_at AS "createdAt", updated_at AS "updatedAt"`;

const json = <T>(v: unknown): T => (typeof v === "string" ? (JSON.parse(v) as T) : (v as T));
const orNull = (v: number | null) => (v === null ? null : Number(v));

function rule(r: RuleRow): RuleRow {
  return {
    ...r,
    id: Number(r.id),
    workspaceId: Number(r.workspaceId),
    priority: Number(r.priority),
    enabled: Boolean(Number(r.enabled)),
    match: json(r.match),
    channels: r.channels === null ? null : json(r.channels),
    action: json(r.action),
    continueAfter: Boolean(Number(r.continueAfter)),
    whenHolds: r.whenHolds === null ? null : json(r.whenHolds),
    replyWindowSeconds: Number(r.replyWindowSeconds),
    webhookId: orNull(r.webhookId),
    matchedCount: Number(r.matchedCount),
    lastMatchedAt: orNull(r.lastMatchedAt),
  };
}

const text = (v: unknown) => (v === null ? null : JSON.stringify(v));

/** The columns a rule's fields are stored in, in the order fieldValues gives them. */
const FIELDS = [
  "name",
  "priority",
  "enabled",
  "match",
  "channels",
  "action",
  "continue_after",
  "when_holds",
  "reply_window_seconds",
  "webhook_id",
  "updated_at",
];
const fieldValues = (f: RuleFields) => [
  f.name,
  f.priority,
  f.enabled ? 1 : 0,
  text(f.match),
  text(f.channels),
  text(f.action),
  f.continueAfter ? 1 : 0,
  text(f.whenHolds),
  f.replyWindowSeconds,
  f.webhookId,
  f.updatedAt,
];

export function createRuleRepository(db: Executor) {
  return {
    list: async (workspaceId: number): Promise<RuleRow[]> =>
      (await db.all<RuleRow>(`SELECT ${COLUMNS} FROM rule WHERE workspace_id = ? ORDER BY priority, id`, [workspaceId])).map(rule),
    async get(workspaceId: number, id: number): Promise<RuleRow | null> {
      const row = await db.get<RuleRow>(`SELECT ${COLUMNS} FROM rule WHERE workspace_id = ? AND id = ?`, [workspaceId, id]);
      return row ? rule(row) : null;
    },
    async byName(workspaceId: number, name: string): Promise<RuleRow | null> {
      const row = await db.get<RuleRow>(`SELECT ${COLUMNS} FROM rule WHERE workspace_id = ? AND name = ?`, [workspaceId, name]);
      return row ? rule(row) : null;
    },
    /** The priority after the last rule's: a new rule goes to the end. */
    async nextPriority(workspaceId: number): Promise<number> {
      const row = await db.get<{ p: number | null }>("SELECT max(priority) AS p FROM rule WHERE workspace_id = ?", [workspaceId]);
      return row?.p === null || row?.p === undefined ? 10 : Number(row.p) + 10;
    },
    async insert(workspaceId: number, f: RuleFields, now: number): Promise<number> {
      const row = await db.get<{ id: number }>(
        `INSERT INTO rule (${FIELDS.join(", ")}, workspace_id, matched_count, created_at) VALUES (${FIELDS.map(() => "?").join(", ")}, ?, 0, ?)
         RETURNING id`,
        [...fieldValues(f), workspaceId, now],
      );
      return Number(row!.id);
    },
    async update(id: number, f: RuleFields): Promise<void> {
      await db.run(`UPDATE rule SET ${FIELDS.map((c) => `${c} = ?`).join(", ")} WHERE id = ?`, [...fieldValues(f), id]);
    },
    setPriority: async (workspaceId: number, id: number, priority: number, now: number) =>
      void (await db.run("UPDATE rule SET priority = ?, updated_at = ? WHERE workspace_id = ? AND id = ?", [
        priority,
        now,
        workspaceId,
        id,
      ])),
    async remove(workspaceId: number, id: number): Promise<void> {
      await db.run("DELETE FROM rule_reply WHERE rule_id = ?", [id]);
      await db.run("DELETE FROM rule WHERE workspace_id = ? AND id = ?", [workspaceId, id]);
    },
    matched: async (id: number, at: number) =>
      void (await db.run("UPDATE rule SET matched_count = matched_count + 1, last_matched_at = ? WHERE id = ?", [at, id])),

    /** Replies to a sender since `since`: by one rule, or (rule null) by all of the workspace's. */
    async repliesSince(workspaceId: number, sender: string, since: number, ruleId: number | null): Promise<number> {
      const row = await db.get<{ n: number }>(
        `SELECT count(*) AS n FROM rule_reply WHERE workspace_id = ? AND sender = ? AND at > ?${ruleId === null ? "" : " AND rule_id = ?"}`,
        ruleId === null ? [workspaceId, sender, since] : [workspaceId, sender, since, ruleId],
      );
      return Number(row?.n ?? 0);
    },
    /** Records a reply, and forgets this sender's older than `forgetBefore` (no window reaches them). */
    /**
     * Records an automatic message to `sender` (`ruleId` 0: a forward about them); forgets this
     * rule's older than `forgetBefore` (its window has passed) and any older than `forgetAllBefore`
     * (past the longest window a rule can have). Another rule's records stay: its window may be longer.
     */
    async addReply(
      workspaceId: number,
      ruleId: number,
      sender: string,
      at: number,
      forgetBefore: number,
      forgetAllBefore: number,
    ): Promise<void> {
      await db.run("DELETE FROM rule_reply WHERE workspace_id = ? AND sender = ? AND ((rule_id = ? AND at < ?) OR at < ?)", [
        workspaceId,
        sender,
        ruleId,
        forgetBefore,
        forgetAllBefore,
      ]);
      await db.run("INSERT INTO rule_reply (workspace_id, rule_id, sender, at) VALUES (?, ?, ?, ?)", [workspaceId, ruleId, sender, at]);
    },
  };
}

export type RuleRepository = ReturnType<typeof createRuleRepository>;
