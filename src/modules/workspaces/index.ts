// The workspaces module: the account's workspaces (projects) and their API keys over the API.
import type { ModuleDescriptor } from "../../services-type";
import { keyRoutes } from "./key-routes";
import { workspaceRoutes } from "./routes";

export const workspacesModule: ModuleDescriptor = { name: "workspaces", routes: (s) => ({ api: [workspaceRoutes(s), keyRoutes(s)] }) };
