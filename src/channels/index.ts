// The channels Pigeon carries messages through. The composition root builds each one, the app
// mounts their routes (in this order), the worker runs their tasks; nothing else names a channel.
import { chatapp } from "./chatapp";
import { cloud } from "./cloud";
import { phone } from "./phone";

export const CHANNELS = [chatapp, cloud, phone] as const;
