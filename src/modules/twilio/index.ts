// The Twilio-compatible module: its repository, its service (credentials, the Messages API) and its
// posts (status callbacks, incoming messages and their TwiML replies), built here once.
import type { Cluster } from "../../core/cluster";
import type { Resolver } from "../../lib/net-safety";
import { createTwilioPosts, type TwilioPostDeps } from "./posts";
import { createTwilioRepository } from "./repository";
import { createTwilioService, type TwilioDeps } from "./service";

export function createTwilioModule(
  deps: Omit<TwilioDeps, "repo"> &
    Pick<TwilioPostDeps, "optedOut" | "log"> & { cluster: Cluster; allowPrivate: boolean; resolve?: Resolver; fetch?: typeof fetch },
) {
  const repo = createTwilioRepository(deps.storage);
  const posts = createTwilioPosts({ ...deps, repo });
  return { ...createTwilioService({ ...deps, repo }), posts };
}
