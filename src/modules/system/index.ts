// The system module: health, server info and the disk, and the scheduled backups (SQLite).
import type { ModuleDescriptor } from "../descriptor";
import { systemRoutes } from "./routes";

export const systemModule: ModuleDescriptor = {
  name: "system",
  routes: (s) => ({ api: [systemRoutes(s)] }),
  // Scheduled backups (SQLite, PIGEON_BACKUP_DIR): checked every second, taken when due.
  tasks: (s) => (s.backups ? [{ name: "backups:schedule", everySeconds: 1, run: () => s.backups?.tick() }] : []),
};
