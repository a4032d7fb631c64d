import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createApp } from "../src/app";
import { systemClock } from "../src/clock";
import { openDatabase } from "../src/db/client";
import { migrate } from "../src/db/migrate";
import { createServices } from "../src/services";
import { testConfig } from "../test/helpers/context";
const dir = mkdtempSync(join(tmpdir(), "pigeon-micro-"));
const db = openDatabase(join(dir, "pigeon.db"));
migrate(db);
const services = createServices({ db, config: testConfig({ dbPath: join(dir, "pigeon.db") }), clock: systemClock, log: () => {} });
services.accounts.seed();
const boot = services.accounts.bootstrap()!;
services.accounts.upsertPlan({ code: "owner", name: "Owner", requestsPerMinute: 10_000_000, requestsPerDay: 100_000_000 });
const key = services.accounts.createKey("bench", boot.workspace.id);
const app = createApp(services);
const headers = new Headers({ authorization: `Bearer ${key.api_key}`, "x-api-secret": key.api_secret, "content-type": "application/json" });
await app.handle(new Request("http://localhost/v1/api/device/batch/register", { method: "POST", headers, body: JSON.stringify({ devices: [{ name: "phone" }] }) }));
db.$client.run("UPDATE device SET last_seen_at = ? WHERE kind = 'sms'", [Date.now() + 3_600_000]);
const N = 20000;
const distinct = process.env.DISTINCT === "1";
let t = performance.now();
for (let r = 0; r < N / 32; r++) {
  await Promise.all(Array.from({ length: 32 }, (_, k) => app.handle(new Request("http://localhost/v1/api/sms/send", { method: "POST", headers, body: JSON.stringify({ recipient_contact: distinct ? `+1415555${String(r * 32 + k).padStart(4, "0")}` : "+14155552671", message: "Your order is ready for pickup." }) }))));
}
console.log("send", (((performance.now() - t) * 1000) / N).toFixed(1), "µs each");
t = performance.now();
let n = 0;
while (true) { const k = services.threads.catchUp(1000); n += k; if (k < 1000) break; }
console.log("catchUp", n, (((performance.now() - t) * 1000) / n).toFixed(1), "µs each");
