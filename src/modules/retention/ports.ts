// What other modules and the channels may use of the retention module's storage: narrow views of its
// repositories, each naming only the methods used outside the module. The repositories stay private.
import type { RetentionRepository } from "./repository";

export type RemovalStore = Pick<RetentionRepository, "removeNotifications">;
