// Opening the database for a command: config, database (SQLite in the data directory, or
// PostgreSQL at PIGEON_DATABASE_URL), migrations, the key check and seed data.
import { systemClock } from "../clock";
import { ConfigError, ensureDataDir, loadConfig, redactedDatabaseUrl, type Config } from "../config";
import { closeDatabase, openDatabase, type Db } from "../db/client";
import { migrate } from "../db/migrate";
import { migratePostgres, postgresMajorVersion, STARTUP_LOCK, withAdvisoryLock } from "../db/postgres-migrate";
import { connectPostgres, type PostgresPool } from "../db/postgres-storage";
import { checkDatabaseKey } from "../db/key-check";
import { createServices, type Services } from "../services";

export interface Runtime {
  config: Config;
  services: Services;
  /** The PostgreSQL pool when running on PostgreSQL; null on SQLite. */
  postgres: PostgresPool | null;
  /** The SQLite database when running on SQLite; null on PostgreSQL. */
  sqlite: Db["$client"] | null;
  /**
   * Runs `fn` alone among every server and command sharing the database (on SQLite the data
   * directory's single server makes this a plain call): the first start's bootstrap.
   */
  exclusive<T>(fn: () => Promise<T>): Promise<T>;
  close(): void;
}

/** PostgreSQL could not be reached or refused us: the operator's to fix, said in one line. */
export class DatabaseUnavailable extends Error {}

export async function openRuntime(env: Record<string, string | undefined> = process.env): Promise<Runtime> {
  const config = loadConfig(env);
  ensureDataDir(config.dataDir);
  if (config.databaseUrl) return openPostgres(config);
  const db = openDatabase(config.dbPath);
  migrate(db);
  const services = createServices({ db, config, clock: systemClock });
  await checkDatabaseKey(services.storage, services.secrets);
  await services.accounts.seed();
  return { config, services, postgres: null, sqlite: db.$client, exclusive: (fn) => fn(), close: () => closeDatabase(db) };
}

async function openPostgres(config: Config): Promise<Runtime> {
  const pool = connectPostgres(config.databaseUrl!);
  const close = () => void pool.end({ timeout: 5 }).catch(() => {});
  let major: number;
  try {
    major = await postgresMajorVersion(pool);
  } catch (error) {
    close();
    throw new DatabaseUnavailable(`cannot reach PostgreSQL at ${redactedDatabaseUrl(config.databaseUrl!)}: ${oneLine(error)}`);
  }
  try {
    if (major < 13) throw new ConfigError(`PIGEON_DATABASE_URL: PostgreSQL ${major} is too old (13 or newer)`);
    await migratePostgres(pool);
    const services = createServices({ db: null, postgres: pool, config, clock: systemClock });
    const exclusive = <T>(fn: () => Promise<T>) => withAdvisoryLock(pool, STARTUP_LOCK, fn);
    await exclusive(async () => {
      await checkDatabaseKey(services.storage, services.secrets);
      await services.accounts.seed();
    });
    return { config, services, postgres: pool, sqlite: null, exclusive, close };
  } catch (error) {
    close();
    throw error;
  }
}

function oneLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split("\n")[0];
}
