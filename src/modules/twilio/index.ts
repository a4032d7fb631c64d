// The Twilio-compatible module: its repository and its service, built here once.
import { createTwilioRepository } from "./repository";
import { createTwilioService, type TwilioDeps } from "./service";

export function createTwilioModule(deps: Omit<TwilioDeps, "repo">) {
  return createTwilioService({ ...deps, repo: createTwilioRepository(deps.storage) });
}
