// Accept-path throughput: POST /v1/api/sms/send in-process (app.handle) on a file database with
// synchronous=FULL, sequentially and with concurrency, and the worker's dispatch of cloud SMS to a
// local fake provider. Run: bun run bench/send.ts [count]
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createApp } from "../src/app";
import { systemClock } from "../src/clock";
import { openDatabase } from "../src/db/client";
import { migrate } from "../src/db/migrate";
import { createServices } from "../src/services";
import { startFakeCloud } from "../test/helpers/fake-cloud";
import { testConfig } from "../test/helpers/context";

const COUNT = Number(process.argv[2] ?? 3000);
const dir = mkdtempSync(join(tmpdir(), "pigeon-bench-"));
const db = openDatabase(join(dir, "pigeon.db"));
migrate(db);
const services = createServices({ db, config: testConfig({ dbPath: join(dir, "pigeon.db") }), clock: systemClock, log: () => {} });
await services.accounts.seed();
const boot = (await services.accounts.bootstrap())!;
await services.accounts.upsertPlan({ code: "owner", name: "Owner", requestsPerMinute: 10_000_000, requestsPerDay: 100_000_000 });
const key = await services.accounts.createKey("bench", boot.workspace.id);
const app = createApp(services);
const fake = await startFakeCloud();

const headers = { authorization: `Bearer ${key.api_key}`, "x-api-secret": key.api_secret, "content-type": "application/json" };
const call = (path: string, body: unknown) =>
  app.handle(new Request(`http://localhost${path}`, { method: "POST", headers, body: JSON.stringify(body) }));

await call("/v1/api/device/batch/register", {
  devices: [
    { name: "phone" },
    {
      name: "cloud",
      kind: "cloud",
      send_limit_per_minute: 6000,
      cloud: { account_sid: fake.accountSid, auth_token: fake.authToken, from_number: "+15005550006", base_url: fake.url },
    },
  ],
});
db.$client.run("UPDATE device SET last_seen_at = ? WHERE kind = 'sms'", [Date.now() + 3_600_000]);
await services.credits.topUp(boot.workspace.id, 10_000_000, "bench");

function pct(sorted: number[], p: number) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function run(label: string, concurrency: number, body: (i: number) => unknown) {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < COUNT) {
        const i = next++;
        const t0 = performance.now();
        const res = await call("/v1/api/sms/send", body(i));
        if (res.status !== 200) throw new Error(`${res.status} ${await res.text()}`);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  console.log(
    `${label.padEnd(40)} ${String(Math.round(COUNT / seconds)).padStart(7)} req/s   p50 ${pct(latencies, 50).toFixed(2)} ms   p99 ${pct(latencies, 99).toFixed(2)} ms`,
  );
}

console.log(`${COUNT} sends per row, file database (WAL, synchronous=FULL), Bun ${Bun.version}`);
await run("phone SMS, sequential", 1, (i) => ({ recipient_contact: "+14155552671", message: `bench ${i}` }));
await run("phone SMS, 32 concurrent", 32, (i) => ({ recipient_contact: "+14155552671", message: `bench ${i}` }));
await run("template SMS, 32 concurrent", 32, (i) => ({
  recipient_contact: "+14155552671",
  template_id: "OTP",
  variables: { code: String(i), minutes: 5 },
}));

// Cloud: accept, then let the worker hand everything to the fake provider.
const cloudId = (db.$client.query("SELECT id FROM device WHERE kind = 'cloud'").get() as { id: number }).id;
db.$client.run("UPDATE device SET status = 'inactive' WHERE kind = 'sms'");
await run("cloud SMS (credits debited), 32 concurrent", 32, (i) => ({ recipient_contact: "+14155552671", message: `cloud ${i}` }));
db.$client.run("UPDATE device SET send_limit_per_minute = 1000000 WHERE id = ?", [cloudId]);
const t0 = performance.now();
let dispatched = 0;
for (let n = await services.dispatcher.dispatchDue(); n > 0; n = await services.dispatcher.dispatchDue()) dispatched += n;
const secs = (performance.now() - t0) / 1000;
console.log(
  `${"worker dispatch to local fake provider".padEnd(40)} ${String(Math.round(dispatched / secs)).padStart(7)} msg/s   (${dispatched} messages)`,
);
fake.stop();
