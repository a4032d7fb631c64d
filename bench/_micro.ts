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
const auth = services.authenticate(headers);
const N = 20000;
function time(label: string, fn: () => void, n = N) {
  const t = performance.now();
  fn();
  const us = ((performance.now() - t) * 1000) / n;
  console.log(label.padEnd(40), us.toFixed(1), "µs each");
}
time("authenticate", () => { for (let i = 0; i < N; i++) services.authenticate(headers); });
const input = { channel: "sms" as const, recipient: "+14155552671", message: "Your order is ready for pickup." };
time("prepare", () => { for (let i = 0; i < N; i++) services.sending.prepare(auth, input); });
const sqlite = db.$client;
time("accept (in 1 txn, 32 per savepoint-less)", () => {
  sqlite.transaction(() => {
    for (let i = 0; i < N; i++) {
      const p = services.sending.prepare(auth, input);
      (services.commits as any); 
      sqlite.transaction(() => { try { services.sending.accept(auth, [p]); } catch (e) { if (!String(e).includes("afterCommit")) throw e; } })();
    }
  })();
});
// Group commit end to end, 32 at a time
let t = performance.now();
for (let r = 0; r < N / 32; r++) {
  await Promise.all(Array.from({ length: 32 }, () => services.commits.submit(() => services.sending.accept(auth, [services.sending.prepare(auth, input)]))));
}
console.log("group commit of 32, prepare+accept".padEnd(40), (((performance.now() - t) * 1000) / N).toFixed(1), "µs each");
// Bare insert of a notification-like row
sqlite.run("CREATE TABLE bare (id INTEGER PRIMARY KEY, a TEXT, b TEXT, c INTEGER)");
const ins = sqlite.prepare("INSERT INTO bare (a,b,c) VALUES (?,?,?)");
time("bare insert", () => { sqlite.transaction(() => { for (let i = 0; i < N; i++) ins.run("+14155552671", "Your order is ready", i); })(); });
const body = JSON.stringify({ recipient_contact: "+14155552671", message: "Your order is ready for pickup." });
t = performance.now();
for (let r = 0; r < N / 32; r++) {
  await Promise.all(Array.from({ length: 32 }, () => app.handle(new Request("http://localhost/v1/api/sms/send", { method: "POST", headers, body }))));
}
console.log("app.handle send, 32 at a time".padEnd(40), (((performance.now() - t) * 1000) / N).toFixed(1), "µs each");
const rows = sqlite.query("SELECT count(*) n FROM notification").get();
console.log(rows);
