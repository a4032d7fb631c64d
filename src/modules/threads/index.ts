// The threads module: its repository (shared with the sending path and the channels, which add
// messages to conversations) and the service that reads conversations, built here once.
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import { createAttachments, type AttachmentDeps } from "./attachments";
import { createThreadRepository } from "./repository";
import { createThreadService } from "./service";
import type { ModuleDescriptor } from "../../services-type";
import { threadRoutes } from "./routes";

export function createThreadsModule(deps: { storage: Storage; clock: Clock } & Pick<AttachmentDeps, "caps" | "onReceived">) {
  const repository = createThreadRepository(deps.storage);
  const attachments = createAttachments(deps);
  return {
    // What the sending path and the channels use: the conversations, and a received MMS's parts kept.
    repository: { ...repository, checkAttachments: attachments.check, keepAttachments: attachments.keep },
    service: createThreadService(repository, attachments, deps.clock),
  };
}

/**
 * Sends added to their threads per unit of work of the worker's catch-up, kept small: the sends
 * whose units share the catch-up's commit wait for it (bench/NOTES.md has the measurements).
 */
const THREAD_CATCH_UP_CHUNK = 50;

export const threadsModule: ModuleDescriptor = {
  name: "threads",
  routes: (s) => ({ api: [threadRoutes(s)] }),
  // Sends reach their threads in chunks, letting requests in between (each read also catches up first).
  tasks: (s) => [
    {
      name: "threads:catch-up",
      everySeconds: s.config.workerIntervalSeconds,
      run: async () => {
        while ((await s.threads.catchUp(THREAD_CATCH_UP_CHUNK)) === THREAD_CATCH_UP_CHUNK)
          await new Promise((resolve) => setImmediate(resolve));
      },
    },
  ],
};
