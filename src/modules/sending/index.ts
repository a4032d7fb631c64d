// The sending module: every send's path from request to stored notification (src/modules/sending/service.ts),
// its routes, and the failover of sends whose route stopped answering.
import type { ModuleDescriptor } from "../descriptor";
import { fastSendRoutes, sendingRoutes } from "./routes";

export const sendingModule: ModuleDescriptor = {
  name: "sending",
  routes: (s) => ({ api: [sendingRoutes(s)] }),
  fastRoutes: (s) => fastSendRoutes(s),
  tasks: (s) => [
    {
      name: "notifications:failover",
      everySeconds: s.config.workerIntervalSeconds,
      run: () => s.sending.failoverStranded(s.config.failoverGraceSeconds * 1000),
    },
  ],
};
