// The storage seam holds: only src/db/ and the repositories speak to a database driver. Services,
// routes, channels and tasks see repositories and the unit of work, never bun:sqlite or drizzle,
// and every repository runs its SQL through the seam's executor (the few that cannot say why).
import { describe, expect, test } from "bun:test";
import { Glob } from "bun";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createTestContext } from "./helpers/context";

const SRC = join(import.meta.dir, "../src");

const DRIVER = /from\s+"(bun:sqlite|drizzle-orm\/[^"]*|postgres)"/;
const isRepository = (file: string) => /(^|\/|-)repository\.ts$/.test(file);
const sources = () => [...new Glob("**/*.ts").scanSync(SRC)].sort();
const read = (file: string) => readFileSync(join(SRC, file), "utf8");

/** Repositories that keep the driver's handle, and why. */
const DRIVER_REPOSITORIES: Record<string, string> = {
  "modules/system/repository.ts": "the backup copies the SQLite file itself (VACUUM INTO), which no unit of work may wrap",
};

describe("the storage seam", () => {
  test("no service, route, channel or task imports a database driver", () => {
    const importers = sources().filter((file) => DRIVER.test(read(file)));
    // The scan finds drivers where they belong: the SQLite storage and the migrator use bun:sqlite.
    expect(importers).toContain("db/sqlite-storage.ts");
    expect(importers.filter((file) => !file.startsWith("db/") && !isRepository(file))).toEqual([]);
  });

  test("every repository takes the executor, not a driver, but those that say why", () => {
    const repositories = sources().filter((file) => isRepository(file) && !file.startsWith("db/"));
    expect(repositories.length).toBeGreaterThan(15);
    for (const file of repositories) {
      const text = read(file);
      const usesDriver = DRIVER.test(text) || /\bDb\b|\$client/.test(text);
      expect({ file, usesDriver, seam: /db\/storage"/.test(text) }).toEqual({
        file,
        usesDriver: file in DRIVER_REPOSITORIES,
        seam: !(file in DRIVER_REPOSITORIES),
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
});
