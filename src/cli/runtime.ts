// Opening the data directory for a command: config, database, migrations and seed data.
import { systemClock } from "../clock";
import { ensureDataDir, loadConfig, type Config } from "../config";
import { closeDatabase, openDatabase } from "../db/client";
import { migrate } from "../db/migrate";
import { createServices, type Services } from "../services";

export interface Runtime {
  config: Config;
  services: Services;
  close(): void;
}

export async function openRuntime(env: Record<string, string | undefined> = process.env): Promise<Runtime> {
  const config = loadConfig(env);
  ensureDataDir(config.dataDir);
  const db = openDatabase(config.dbPath);
  migrate(db);
  const services = createServices({ db, config, clock: systemClock });
  await services.accounts.seed();
  return { config, services, close: () => closeDatabase(db) };
}
