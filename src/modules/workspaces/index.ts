// The workspaces module: the account's workspaces (projects) over the API.
import type { ModuleDescriptor } from "../descriptor";
import { workspaceRoutes } from "./routes";

export const workspacesModule: ModuleDescriptor = { name: "workspaces", routes: (s) => ({ api: [workspaceRoutes(s)] }) };
