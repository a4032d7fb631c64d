// The Twilio-compatible module: its repository, its service (credentials, the Messages API) and its
// posts (status callbacks, incoming messages and their TwiML replies), built here once.
import type { Cluster } from "../../core/cluster";
import type { Resolver } from "../../lib/net-safety";
import { createTwilioPosts, type TwilioPostDeps } from "./posts";
import { createTwilioRepository } from "./repository";
import { createTwilioService, type TwilioDeps } from "./service";
import type { ModuleDescriptor } from "../descriptor";
import { isTwilioPath, twilioError } from "./errors";
import { twilioRoutes, twilioSettingsRoutes } from "./routes";

export function createTwilioModule(
  deps: Omit<TwilioDeps, "repo"> &
    Pick<TwilioPostDeps, "optedOut" | "log"> & { cluster: Cluster; allowPrivate: boolean; resolve?: Resolver; fetch?: typeof fetch },
) {
  const repo = createTwilioRepository(deps.storage);
  const posts = createTwilioPosts({ ...deps, repo });
  return { ...createTwilioService({ ...deps, repo }), posts };
}

export const twilioModule: ModuleDescriptor = {
  name: "twilio",
  routes: (s) => ({ foreign: [twilioRoutes(s)], api: [twilioSettingsRoutes(s)] }),
  foreign: (s) => ({
    paths: isTwilioPath,
    gate: { matches: isTwilioPath, authenticate: s.twilio.authenticate },
    errors: (path, status, code, message) => twilioError(status, code, message, path),
  }),
  // Twilio-style status callbacks and incoming-message posts (src/modules/twilio/posts.ts).
  tasks: (s) => [{ name: "twilio:posts", everySeconds: s.config.workerIntervalSeconds, run: () => s.twilio.posts.deliverDue() }],
  listeners: (s) => ({
    // A message sent with a StatusCallback: each change of its status is posted, from the change's transaction.
    transitions: (changes) =>
      s.twilio.posts.statusChanged(changes.map(({ before }) => ({ id: before.id, workspaceId: before.workspaceId, hooks: before.hooks }))),
  }),
  recover: async (s) => {
    const posts = await s.twilio.posts.recoverInterrupted();
    return posts > 0 ? `${posts} Twilio-style posts were cut off mid-call by a stop and will be made again` : null;
  },
  stop: (s) => s.twilio.posts.stop(),
};
