// The metrics module: GET /metrics in the Prometheus text format, counted as the server runs.
import type { ModuleDescriptor } from "../descriptor";
import { metricsRoutes } from "./routes";

export const metricsModule: ModuleDescriptor = {
  name: "metrics",
  routes: (s) => ({ api: [metricsRoutes(s)] }),
  // Counts each state a notification reaches once its unit has committed.
  listeners: (s) => s.metrics.listeners,
};
