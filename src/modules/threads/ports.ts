// What other modules and the channels may use of the threads module's storage: narrow views of its
// repositories, each naming only the methods used outside the module. The repositories stay private.
import type { ThreadRepository } from "./repository";

export type ThreadStore = Pick<ThreadRepository, "add" | "completeMms" | "find" | "mmsToComplete" | "removeOutbound">;
