// The overview module: the one-call summary a client shows on its first screen.
import type { ModuleDescriptor } from "../descriptor";
import { overviewRoutes } from "./routes";

export const overviewModule: ModuleDescriptor = { name: "overview", routes: (s) => ({ api: [overviewRoutes(s)] }) };
