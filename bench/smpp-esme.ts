// The bench's ESME, in a process of its own so it does not share the server's event loop: binds as
// a transceiver, keeps WINDOW submit_sm outstanding for SECONDS (each to its own recipient, as a
// campaign sends), answers any deliver_sm, and prints one RESULT line: submits answered ESME_ROK,
// refused, seconds, and p50/p95/p99 of the time from writing a submit to its response, in ms.
import net from "node:net";

const [host, port] = [process.env.HOST ?? "127.0.0.1", Number(process.env.PORT)];
const systemId = process.env.SYSTEM_ID ?? "";
const password = process.env.PASSWORD ?? "";
const seconds = Number(process.env.SECONDS ?? 5);
const window = Number(process.env.WINDOW ?? 10);

const cstr = (s: string) => Buffer.concat([Buffer.from(s, "latin1"), Buffer.of(0)]);
function pdu(id: number, seq: number, body: Buffer, status = 0): Buffer {
  const head = Buffer.alloc(16);
  head.writeUInt32BE(16 + body.length, 0);
  head.writeUInt32BE(id >>> 0, 4);
  head.writeUInt32BE(status, 8);
  head.writeUInt32BE(seq, 12);
  return Buffer.concat([head, body]);
}
const text = Buffer.from("Your order is ready for pickup.", "latin1");
function submit(seq: number): Buffer {
  const to = `1415${2 + Math.floor(Math.random() * 8)}${String(Math.floor(Math.random() * 1e6)).padStart(6, "0")}`;
  const body = Buffer.concat([
    cstr(""),
    Buffer.of(0, 0),
    cstr(""),
    Buffer.of(1, 1),
    cstr(to),
    Buffer.of(0, 0, 0),
    cstr(""),
    cstr(""),
    Buffer.of(0, 0, 3, 0, text.length),
    text,
  ]);
  return pdu(0x00000004, seq, body);
}

const socket = net.connect(port, host);
socket.setNoDelay(true);
let buffer = Buffer.alloc(0);
let seq = 1;
let ok = 0;
let refused = 0;
let running = false;
let deadline = 0;
const sentAt = new Map<number, number>();
const latencies: number[] = [];

function next() {
  if (!running || performance.now() > deadline) return;
  const s = seq++;
  sentAt.set(s, performance.now());
  socket.write(submit(s));
}

function finish() {
  latencies.sort((a, b) => a - b);
  const q = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? 0;
  console.log(`RESULT ${ok} ${refused} ${seconds} ${q(0.5).toFixed(2)} ${q(0.95).toFixed(2)} ${q(0.99).toFixed(2)}`);
  socket.destroy();
  process.exit(0);
}

socket.on("data", (chunk: Buffer) => {
  buffer = Buffer.concat([buffer, chunk]);
  while (buffer.length >= 16 && buffer.length >= buffer.readUInt32BE(0)) {
    const length = buffer.readUInt32BE(0);
    const id = buffer.readUInt32BE(4);
    const status = buffer.readUInt32BE(8);
    const s = buffer.readUInt32BE(12);
    buffer = buffer.subarray(length);
    if (id === 0x80000009) {
      if (status !== 0) {
        console.error(`bind refused: ${status}`);
        process.exit(1);
      }
      running = true;
      deadline = performance.now() + seconds * 1000;
      for (let i = 0; i < window; i++) next();
      setTimeout(finish, seconds * 1000 + 2000);
    } else if (id === 0x80000004) {
      const at = sentAt.get(s);
      sentAt.delete(s);
      if (at !== undefined && status === 0) {
        ok++;
        latencies.push(performance.now() - at);
      } else refused++;
      if (performance.now() <= deadline) next();
      else if (sentAt.size === 0) finish();
    } else if (id === 0x00000005) {
      socket.write(pdu(0x80000005, s, Buffer.of(0)));
    } else if (id === 0x00000015) {
      socket.write(pdu(0x80000015, s, Buffer.alloc(0)));
    }
  }
});
socket.on("connect", () => {
  socket.write(pdu(0x00000009, seq++, Buffer.concat([cstr(systemId), cstr(password), cstr(""), Buffer.of(0x34, 0, 0), cstr("")])));
});
socket.on("error", (error) => {
  console.error(String(error));
  process.exit(1);
});
