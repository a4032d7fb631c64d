// The storage seam holds: only src/db/ and the repositories speak to a database driver. Services,
// routes, channels and tasks see repositories and the unit of work, never bun:sqlite or drizzle,
// and every repository runs its SQL through the seam's executor (the few that cannot say why).
import { describe, expect, test } from "bun:test";
import { Glob } from "bun";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createChatappRepository } from "../../src/channels/chatapp/repository";
import { createPhoneRepository } from "../../src/channels/phone/repository";
import type { Executor } from "../../src/db/storage";
import { createStatusRepository } from "../../src/modules/notifications/repository";
import type { NotificationRecord } from "../../src/modules/notifications/model";
import { createTestContext } from "../helpers/context";

const SRC = join(import.meta.dir, "../../src");

const DRIVER = /from\s+"(bun:sqlite|drizzle-orm\/[^"]*|postgres)"/;
const isRepository = (file: string) => /(^|\/|-)repository\.ts$/.test(file);
/** A module's (or a layer's) tables, declared with drizzle's table builders. */
const isSchema = (file: string) => /(^|\/)schema\.ts$/.test(file);
const BUILDERS = /from\s+"drizzle-orm\/sqlite-core"/g;
const sources = () => [...new Glob("**/*.ts").scanSync(SRC)].sort();
const read = (file: string) => readFileSync(join(SRC, file), "utf8");

/** Repositories that keep the driver's handle, and why. */
const DRIVER_REPOSITORIES: Record<string, string> = {
  "modules/system/repository.ts": "the backup copies the SQLite file itself (VACUUM INTO), which no unit of work may wrap",
  "modules/retention/repository.ts":
    "SQLite gives freed pages back with PRAGMA incremental_vacuum, and an older file is switched to it with VACUUM: neither may run in a unit of work",
};

describe("the storage seam", () => {
  test("no service, route, channel or task imports a database driver", () => {
    const importers = sources().filter((file) => DRIVER.test(read(file)));
    // The scan finds drivers where they belong: the SQLite storage and the migrator use bun:sqlite.
    expect(importers).toContain("db/sqlite-storage.ts");
    expect(importers.filter((file) => !file.startsWith("db/") && !isRepository(file) && !isSchema(file))).toEqual([]);
    // A schema file beside its module imports drizzle's table builders, never a connection.
    const schemas = sources().filter((file) => isSchema(file) && !file.startsWith("db/"));
    expect(schemas.length).toBeGreaterThan(15);
    expect(schemas.filter((file) => DRIVER.test(read(file).replace(BUILDERS, "")))).toEqual([]);
  });

  test("every repository takes the executor, not a driver, but those that say why", () => {
    const repositories = sources().filter((file) => isRepository(file) && !file.startsWith("db/"));
    expect(repositories.length).toBeGreaterThan(15);
    for (const file of repositories) {
      const text = read(file);
      const usesDriver = DRIVER.test(text) || /\b(Db|SqliteHandle)\b|\$client/.test(text);
      // A repository that keeps the driver for what only the driver can do may use the seam for the rest.
      const seam = /db\/storage"/.test(text);
      expect({ file, usesDriver, seam: seam || file in DRIVER_REPOSITORIES }).toEqual({
        file,
        usesDriver: file in DRIVER_REPOSITORIES,
        seam: true,
      });
    }
  });

  test("channels are given repositories and the unit of work, not the database's handles", async () => {
    const ctx = await createTestContext();
    const core = ctx.services.channelCore as unknown as Record<string, unknown>;
    expect(Object.keys(core)).toContain("storage");
    expect(Object.keys(core)).toContain("notifications");
    expect(Object.keys(core).filter((k) => k === "db" || k === "sqlite")).toEqual([]);
  });

  test("notifications leave every repository as domain records: camelCase, JSON parsed, real booleans", async () => {
    const ctx = await createTestContext();
    const phone = await ctx.phone();
    const core = ctx.services.channelCore;
    const db = ctx.services.storage as Executor;
    const id = await ctx.services.storage.transaction(() =>
      core.notifications.insert({
        workspaceId: ctx.workspace.id,
        apiKeyId: null,
        deliveryType: "sms",
        route: "sms",
        deviceId: phone.device_id,
        recipient: "+15551234567",
        recipientName: null,
        templateId: null,
        templateVars: { "1": "Ada" },
        message: "hello",
        scheduleAt: null,
        timezone: null,
        nextAttemptAt: ctx.clock.now(),
        segments: 1,
        cost: 0,
        externalId: "seam-probe",
        channelPayload: { media: { link: "https://example.com/a.png" } },
        simNumber: null,
        priority: 0,
        hooks: 0,
        withDeliveryReport: true,
        validUntil: null,
        routes: ["sms", "cloud"],
        fallback: { template: "welcome" },
        createdAt: ctx.clock.now(),
      }),
    );
    const reads: [string, NotificationRecord | null | undefined][] = [
      ["notifications.get", await core.notifications.get(ctx.workspace.id, id)],
      ["notifications.byExternalId", await core.notifications.byExternalId("seam-probe", phone.device_id)],
      ["notifications.list", (await core.notifications.list(ctx.workspace.id, {}, 0, 10)).rows[0]],
      ["status.byId", await createStatusRepository(db).byId(id)],
      [
        "phone.waitingFor",
        (await createPhoneRepository(db, core.notifications).waitingFor(phone.device_id, ctx.clock.now(), 100, "paced", 10))[0],
      ],
      ["phone.byPhoneId", await createPhoneRepository(db, core.notifications).byPhoneId("seam-probe", phone.device_id)],
    ];
    for (const [where, n] of reads) {
      expect({ where, found: !!n }).toEqual({ where, found: true });
      const record = n as NotificationRecord;
      expect({ where, snake: Object.keys(record).filter((k) => k.includes("_")) }).toEqual({ where, snake: [] });
      expect({ where, id: record.id, routes: record.routes, fallback: record.fallback, vars: record.templateVars }).toEqual({
        where,
        id,
        routes: ["sms", "cloud"],
        fallback: { template: "welcome" },
        vars: { "1": "Ada" },
      });
      expect({ where, report: record.withDeliveryReport, reconcile: record.needsReconcile, cancel: record.cancelPending }).toEqual({
        where,
        report: true,
        reconcile: false,
        cancel: false,
      });
      expect(record.channelPayload).toEqual({ media: { link: "https://example.com/a.png" } });
    }
    // The chat-app's lookup by platform id reads the same shape (a chat-app route, so none here).
    expect(await createChatappRepository(db).notificationByWamid("seam-probe", phone.device_id)).toBeNull();
  });
});
