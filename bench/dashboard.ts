// Dashboard page times with a large history: the compiled binary on a temp data dir holding
// 100,000 messages (and 2,000 conversations), signed in as a browser would, each page fetched 30
// times after a warm-up; prints the median and p95 per page. Black-box: the data is written
// straight into the database before the server starts, then only HTTP is used.
// Run: bun run build && bun run bench/dashboard.ts [messages]
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const MESSAGES = Number(process.argv[2] ?? 100_000);
const BIN = join(import.meta.dir, "../dist/pigeon");
const dir = mkdtempSync(join(tmpdir(), "pigeon-bench-dash-"));
const env = { PATH: process.env.PATH ?? "", PIGEON_DATA_DIR: dir, PIGEON_HOST: "127.0.0.1", PIGEON_PORT: "0" };
const EMAIL = "bench@example.com";
const PASSWORD = "a long enough secret";

const run = (args: string[]) => {
  const r = Bun.spawnSync([BIN, ...args], { env, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${args.join(" ")}: ${r.stderr.toString()}`);
};
run(["migrate"]);
run(["users", "create", "--email", EMAIL, "--password", PASSWORD]);

// The history: a phone, messages over the last 30 days in every status, conversations.
const db = new Database(join(dir, "pigeon.db"));
const now = Date.now();
db.run(
  "INSERT INTO device (workspace_id, name, kind, external_id, created_at, updated_at) VALUES (1, 'Bench phone', 'sms', 'bench-phone', ?, ?)",
  [now, now],
);
const statuses = ["delivered", "delivered", "delivered", "sent", "failed", "pending"];
const insert = db.prepare(
  "INSERT INTO notification (workspace_id, delivery_type, route, device_id, recipient, message, status, stage, next_attempt_at, created_at, updated_at) VALUES (1, 'sms', 'sms', 1, ?, ?, ?, 'done', ?, ?, ?)",
);
const thread = db.prepare(
  "INSERT INTO thread (workspace_id, channel, peer, last_message_at, last_message_preview, last_direction, unread_count, created_at) VALUES (1, 'sms', ?, ?, 'Hello', 'inbound', 1, ?)",
);
db.transaction(() => {
  for (let i = 0; i < MESSAGES; i++) {
    const at = now - Math.floor((i / MESSAGES) * 30 * 86_400_000);
    insert.run(
      `+1415555${String(i % 10_000).padStart(4, "0")}`,
      `Message number ${i} about order ${i * 7}`,
      statuses[i % statuses.length],
      at,
      at,
      at,
    );
  }
  for (let i = 0; i < 2000; i++) thread.run(`+1415666${String(i).padStart(4, "0")}`, now - i * 1000, now - i * 1000);
})();
db.close();

const proc = Bun.spawn([BIN, "serve"], { env, stdout: "pipe", stderr: "pipe" });
let out = "";
void (async () => {
  const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
  for (let r = await reader.read(); !r.done; r = await reader.read()) out += new TextDecoder().decode(r.value);
})();
let port = 0;
for (let i = 0; i < 200 && !port; i++) {
  port = Number(/listening on http:\/\/[^:]+:(\d+)/.exec(out)?.[1] ?? 0);
  await Bun.sleep(50);
}
const base = `http://127.0.0.1:${port}`;
const form = await fetch(`${base}/dashboard/sign-in`);
const pre = /pigeon_presession=([A-Za-z0-9]+)/.exec(form.headers.get("set-cookie") ?? "")![1];
const signed = await fetch(`${base}/dashboard/sign-in`, {
  method: "POST",
  redirect: "manual",
  headers: { cookie: `pigeon_presession=${pre}`, "content-type": "application/x-www-form-urlencoded" },
  body: new URLSearchParams({ _csrf: pre, email: EMAIL, password: PASSWORD }).toString(),
});
const cookie = `pigeon_session=${/pigeon_session=([A-Za-z0-9]+)/.exec(signed.headers.get("set-cookie") ?? "")![1]}`;

const pages = [
  "/dashboard",
  "/dashboard/messages",
  "/dashboard/messages?status=failed",
  "/dashboard/messages?text=order%2012",
  "/dashboard/messages?page=1500",
  "/dashboard/messages/50000",
  "/dashboard/inbox",
  "/dashboard/devices",
  "/dashboard/send",
  "/dashboard/keys",
];
console.log(`${MESSAGES} messages, 2000 conversations; ms per page (30 fetches each):`);
console.log("page                                  median    p95");
for (const page of pages) {
  const times: number[] = [];
  for (let i = 0; i < 33; i++) {
    const t = performance.now();
    const res = await fetch(base + page, { headers: { cookie } });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${page}: ${res.status}`);
    if (i >= 3) times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  console.log(
    `${page.padEnd(36)} ${times[Math.floor(times.length / 2)].toFixed(1).padStart(7)} ${times[Math.floor(times.length * 0.95)].toFixed(1).padStart(7)}`,
  );
}
proc.kill("SIGTERM");
await proc.exited;
rmSync(dir, { recursive: true, force: true });
