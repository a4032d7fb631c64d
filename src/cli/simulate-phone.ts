// A stand-in for the "SMS Gateway for Android" app in Cloud-server mode with notifications set to
// SSE only, speaking the phone's side of the companion-app protocol
// (docs/phone.md; the app's source is capcom6/android-sms-gateway), so Pigeon can be tried end to end without a phone
// and our tests can drive the real binary the way a paired phone would.
// Where the app's behaviour is observable on the wire (paths, bodies, headers, dates, retries,
// webhook signing) this copies it; everything a handset would do with a radio is simulated.
//
// Split by job under simulate-phone/: args.ts (the command line), protocol.ts (the HTTP calls and
// the provisioned settings), event-stream.ts (the SSE parser and reconnect loop), messages.ts (the
// phone's queue and state reports), webhooks.ts (signed webhooks and the simulated inbound SMS),
// lifetime.ts (background work and stopping), parts.ts (what the queue and the poster share) and
// phone.ts (putting one phone together).
export { parseSimulatePhoneArgs, type SimulatedPhoneHandle, type SimulatePhoneOptions } from "./simulate-phone/args";
export { EventStreamParser, reconnectDelay } from "./simulate-phone/event-stream";
export { simulatePhone } from "./simulate-phone/phone";
