// The stats module: counts of messages by day, status and channel over the API.
import type { ModuleDescriptor } from "../descriptor";
import { statsRoutes } from "./routes";

export const statsModule: ModuleDescriptor = { name: "stats", routes: (s) => ({ api: [statsRoutes(s)] }) };
