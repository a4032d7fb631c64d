// What a module may hear of the notifications' lifecycle (a field of its descriptor). Apart from
// the descriptor so that the lifecycle and the channels can name it without the services' type.
import type { Accepted } from "./sending/types";
import type { NotificationRecord, TransitionListener, TransitionsListener } from "./notifications/state";

/**
 * What a module hears of the notifications' lifecycle. Modules hear in the order of LISTENING in
 * src/modules/index.ts (stated there once, with why), each kind of news in that order.
 */
export interface ModuleListeners {
  /** Inside a transition's unit of work, once per transition or batch of them, before `transition`. */
  transitions?: TransitionsListener;
  /** Inside the unit of work, once per change, after every module's `transitions`. */
  transition?: TransitionListener;
  /** Inside the send's unit of work: the sends just stored. */
  stored?: (accepted: Accepted[]) => Promise<void>;
  /** After the send's commit: the sends accepted. */
  accepted?: (accepted: Accepted[]) => void | Promise<void>;
  /** After commit: a notification cancelled through the API. */
  cancelled?: (n: NotificationRecord) => void | Promise<void>;
}
