// The bare limit of Pigeon's stack, measured in the same run as Pigeon for comparison: Bun.serve,
// JSON.parse of the body and one bun:sqlite insert per request into a WAL database with
// synchronous=FULL. MODE=group: the requests that arrive in one event-loop turn share one
// transaction (what Pigeon's group commit does); MODE=single: one transaction per request.
// Prints "listening on <port>".
import { Database } from "bun:sqlite";
import { join } from "node:path";

const mode = process.env.MODE === "single" ? "single" : "group";
const db = new Database(join(process.env.DIR ?? ".", `baseline-${mode}.db`), { create: true });
db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;");
db.exec(
  "CREATE TABLE IF NOT EXISTS message (id INTEGER PRIMARY KEY, recipient TEXT NOT NULL, body TEXT NOT NULL, created_at INTEGER NOT NULL)",
);
const insert = db.prepare<{ id: number }, [string, string, number]>(
  "INSERT INTO message (recipient, body, created_at) VALUES (?, ?, ?) RETURNING id",
);

type Job = { recipient: string; body: string; resolve: (id: number) => void };
let queue: Job[] = [];
const flush = db.transaction((jobs: Job[]) => jobs.map((j) => insert.get(j.recipient, j.body, Date.now())!.id));

function store(recipient: string, body: string): Promise<number> | number {
  if (mode === "single") return db.transaction(() => insert.get(recipient, body, Date.now())!.id)();
  return new Promise((resolve) => {
    queue.push({ recipient, body, resolve });
    if (queue.length === 1) {
      setImmediate(() => {
        const jobs = queue;
        queue = [];
        const ids = flush(jobs);
        for (const [i, j] of jobs.entries()) j.resolve(ids[i]);
      });
    }
  });
}

const server = Bun.serve({
  port: Number(process.env.PORT ?? 0),
  hostname: "127.0.0.1",
  async fetch(req) {
    const input = JSON.parse(await req.text()) as { recipient_contact?: string; message?: string };
    const id = await store(String(input.recipient_contact ?? ""), String(input.message ?? ""));
    return Response.json({ status_id: 200, message: "ok", data: { notification_id: id } });
  },
});
console.log(`listening on ${server.port}`);
