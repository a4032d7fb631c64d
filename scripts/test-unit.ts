// `npm run test:unit`: the quick loop while working, meant to stay under a minute. It runs, in one
// `bun test` on SQLite, the test folders that need no build (nothing from dist/), no browser and no
// PostgreSQL server, and are quick together: the pure parts (test/lib, test/core), the layer and
// seam tests (test/arch), config, the helpers' own checks, the phone simulator, the module folders
// listed below, and the pure files of the slower folders (UNIT_FILES). Left to `npm test`: the
// other in-process folders (test/http, test/sending, test/channels, test/db, test/docs,
// test/dashboard and the module folders not listed), which take several minutes together;
// test/binary/ (the compiled dist/pigeon); test/postgres/ (a throwaway PostgreSQL cluster whatever
// the back end). Add a folder here when its tests are pure or quick, a file when it alone is.
// Arguments go on to bun test (`npm run test:unit -- -t keyword`).
import { existsSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dir, "..");
const UNIT_FOLDERS = [
  "lib",
  "core",
  "arch",
  "app",
  "harness",
  "cli",
  "rules",
  "templates",
  "privacy",
  "verify",
  "twilio",
  "retention",
  "threads",
  "webhooks",
];

/** Pure tests in folders left to `npm test`: no database, no server. */
const UNIT_FILES = ["pools/model.test.ts", "sending/choices.test.ts"];

for (const path of [...UNIT_FOLDERS, ...UNIT_FILES])
  if (!existsSync(join(root, "test", path))) throw new Error(`test/${path} does not exist`);
const proc = Bun.spawn(
  [
    process.execPath,
    "test",
    "--timeout",
    "60000",
    ...UNIT_FOLDERS.map((folder) => `./test/${folder}/`),
    ...UNIT_FILES.map((file) => `./test/${file}`),
    ...process.argv.slice(2),
  ],
  { cwd: root, env: { ...process.env, PIGEON_TEST_BACKEND: "sqlite" }, stdout: "inherit", stderr: "inherit" },
);
process.exit(await proc.exited);
