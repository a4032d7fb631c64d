import { Database } from "bun:sqlite";
const stats = new Map<string, { n: number; t: number }>();
for (const m of ["prepare", "query"] as const) {
  const orig = (Database.prototype as any)[m];
  (Database.prototype as any)[m] = function (sql: string, ...rest: unknown[]) {
    const st = orig.call(this, sql, ...rest);
    for (const f of ["get", "run", "all", "values"]) {
      const of = st[f];
      if (typeof of !== "function") continue;
      st[f] = function (...args: unknown[]) {
        const t = performance.now();
        try { return of.apply(st, args); } finally {
          const k = sql.replace(/\s+/g, " ").slice(0, 110);
          const e = stats.get(k) ?? { n: 0, t: 0 }; e.n++; e.t += performance.now() - t; stats.set(k, e);
        }
      };
    }
    return st;
  };
}
const { mkdtempSync } = await import("node:fs");
const { tmpdir } = await import("node:os");
const { join } = await import("node:path");
const { createApp } = await import("../src/app");
const { systemClock } = await import("../src/clock");
const { openDatabase } = await import("../src/db/client");
const { migrate } = await import("../src/db/migrate");
const { createServices } = await import("../src/services");
const { testConfig } = await import("../test/helpers/context");
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
const body = JSON.stringify({ recipient_contact: "+14155552671", message: "Your order is ready for pickup." });
stats.clear();
const t = performance.now();
for (let r = 0; r < N / 32; r++) {
  await Promise.all(Array.from({ length: 32 }, () => app.handle(new Request("http://localhost/v1/api/sms/send", { method: "POST", headers, body }))));
}
const total = performance.now() - t;
console.log("app.handle send:", ((total * 1000) / N).toFixed(1), "µs each");
const rows = [...stats.entries()].sort((a, b) => b[1].t - a[1].t).slice(0, 25);
for (const [k, v] of rows) console.log(((v.t * 1000) / N).toFixed(2).padStart(7), "µs/send", String(v.n).padStart(7), k);
