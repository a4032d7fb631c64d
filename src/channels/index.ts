// The channels Pigeon carries messages through. The composition root builds each one, the app
// mounts their routes (in this order), the worker runs their tasks; nothing else names a channel.
import { chatapp } from "./chatapp";
import { smsCloud } from "./sms-cloud";
import { smsPhone } from "./sms-phone";

export const CHANNELS = [chatapp, smsCloud, smsPhone] as const;
