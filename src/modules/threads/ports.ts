// What other modules and the channels may use of the threads module's storage: narrow views of its
// repositories, each naming only the methods used outside the module. The repositories stay private.
import type { Attachments } from "./attachments";
import type { ThreadRepository } from "./repository";

export type ThreadStore = Pick<ThreadRepository, "add" | "completeMms" | "find" | "mmsToComplete" | "removeOutbound"> & {
  /** Checks a received MMS's parts, then keeps them attached to its thread message (attachments.ts). */
  checkAttachments: Attachments["check"];
  keepAttachments: Attachments["keep"];
};
