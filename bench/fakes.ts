// The providers the worker benchmark dispatches to, in a process of their own so their work is not
// counted against Pigeon's: the local fake of the chat-app platform with ten business numbers (one
// business account) paced at `PER_NUMBER` messages a second each, and the local fake of the cloud
// provider. Prints one JSON line with their addresses, then answers "stats" on stdin with what they
// received: per number, the most messages any one second saw (to check no pace was exceeded).
import { startFakeChatApp } from "../test/helpers/fake-chatapp";
import { startFakeCloud } from "../test/helpers/fake-cloud";

const PER_NUMBER = Number(process.env.PER_NUMBER ?? 250);
export const BENCH_NUMBERS = Array.from({ length: 10 }, (_, i) => String(9000 + i));

const chat = startFakeChatApp({
  appSecret: "bench-secret",
  throughputPerSecond: PER_NUMBER,
  // Every recipient is a different user, so the pair limit never applies.
  wabas: [
    {
      id: "5151",
      name: "Bench",
      phoneNumbers: BENCH_NUMBERS.map((id) => ({
        id,
        display_phone_number: `1 555 01${id}`,
        verified_name: "Bench",
        quality_rating: "GREEN",
      })),
      templates: [{ name: "bench_note", language: "en_US", components: [{ type: "BODY", text: "Note {{1}}" }] }],
    },
  ],
});
const cloud = await startFakeCloud();
console.log(
  JSON.stringify({
    chatUrl: chat.url,
    cloudUrl: cloud.url,
    accountSid: cloud.accountSid,
    authToken: cloud.authToken,
    perNumber: PER_NUMBER,
  }),
);

/** The most messages each number took in any one second, and the totals. */
function stats() {
  const perSecond = new Map<string, Map<number, number>>();
  for (const m of chat.sent) {
    const seconds = perSecond.get(m.phoneNumberId) ?? new Map<number, number>();
    const s = Math.floor(m.at / 1000);
    seconds.set(s, (seconds.get(s) ?? 0) + 1);
    perSecond.set(m.phoneNumberId, seconds);
  }
  const peak = Object.fromEntries([...perSecond].map(([id, seconds]) => [id, Math.max(...seconds.values())]));
  return { chatSent: chat.sent.length, cloudSent: cloud.messages.size, peakPerSecond: peak };
}

for await (const line of console) {
  if (line.trim() === "stats") console.log(JSON.stringify(stats()));
  if (line.trim() === "stop") break;
}
chat.stop();
cloud.stop();
process.exit(0);
