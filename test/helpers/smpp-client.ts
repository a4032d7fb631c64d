// An ESME for the tests, made with the `smpp` package from npm (a client we did not write), and a
// raw socket for what no client library sends: malformed PDUs, impossible lengths, windows of
// PDUs written at once.
import net from "node:net";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const smpp: any = require("smpp");

export interface Pdu {
  command: string;
  command_status: number;
  sequence_number: number;
  [field: string]: any;
}

/** A bound (or not yet bound) session of the `smpp` package, its callbacks as promises. */
export interface Esme {
  /** Sends a command; resolves with its response. */
  call(command: string, fields?: Record<string, unknown>): Promise<Pdu>;
  /** The deliver_sm PDUs received so far (each answered ESME_ROK unless `refuse` says otherwise). */
  delivered: Pdu[];
  /** Resolves once `n` deliver_sm PDUs have arrived (or rejects after `ms`). */
  waitDelivered(n: number, ms?: number): Promise<Pdu[]>;
  /** The deliver_sm_resp status to answer with (0 by default). */
  refuse: number;
  closed: Promise<void>;
  close(): void;
  session: any;
}

export const SMPP_STATUS = smpp.errors as Record<string, number>;

export function connectEsme(port: number, host = "127.0.0.1", tls = false): Promise<Esme> {
  return new Promise((resolve, reject) => {
    const delivered: Pdu[] = [];
    let closedResolve: () => void = () => {};
    const closed = new Promise<void>((r) => {
      closedResolve = r;
    });
    const url = `${tls ? "ssmpp" : "smpp"}://${host}:${port}`;
    const session = smpp.connect({ url, auto_enquire_link_period: 0, rejectUnauthorized: false }, () => resolve(esme));
    const esme: Esme = {
      session,
      delivered,
      refuse: 0,
      closed,
      call: (command, fields = {}) =>
        new Promise((done, fail) => {
          try {
            session[command](fields, (pdu: Pdu) => done(pdu));
          } catch (error) {
            fail(error);
          }
        }),
      async waitDelivered(n, ms = 10_000) {
        const until = Date.now() + ms;
        while (delivered.length < n) {
          if (Date.now() > until) throw new Error(`waited for ${n} deliver_sm, got ${delivered.length}`);
          await Bun.sleep(20);
        }
        return delivered.slice(0, n);
      },
      close: () => session.close(),
    };
    session.on("deliver_sm", (pdu: Pdu) => {
      delivered.push(pdu);
      session.send(pdu.response({ command_status: esme.refuse }));
    });
    session.on("close", () => {
      // A connection that ends before it is made (a server going down or coming up) settles the
      // connect too, so a caller that reconnects is not left waiting on it.
      reject(new Error("the connection closed before it was made"));
      closedResolve();
    });
    session.on("error", (error: Error) => {
      reject(error);
      closedResolve();
    });
  });
}

/** Connects and binds as `as` with the credentials; the session and the bind's response. */
export async function bindEsme(
  port: number,
  credentials: { systemId: string; password: string },
  as: "transceiver" | "transmitter" | "receiver" = "transceiver",
) {
  const esme = await connectEsme(port);
  const resp = await esme.call(`bind_${as}`, { system_id: credentials.systemId, password: credentials.password });
  return { esme, resp };
}

/** A PDU's bytes: header and body. */
export function rawPdu(id: number, sequence: number, body: Uint8Array = new Uint8Array(0), status = 0): Buffer {
  const out = Buffer.alloc(16 + body.length);
  out.writeUInt32BE(out.length, 0);
  out.writeUInt32BE(id >>> 0, 4);
  out.writeUInt32BE(status, 8);
  out.writeUInt32BE(sequence, 12);
  Buffer.from(body).copy(out, 16);
  return out;
}

/** A raw connection: write bytes, read whole PDUs back. */
export async function rawSocket(port: number) {
  const socket = net.connect(port, "127.0.0.1");
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", () => resolve());
    socket.once("error", reject);
  });
  let buffer = Buffer.alloc(0);
  const pdus: { id: number; status: number; sequence: number; body: Buffer }[] = [];
  let ended = false;
  socket.on("data", (chunk) => {
    buffer = Buffer.concat([buffer, chunk as Buffer]);
    while (buffer.length >= 16 && buffer.length >= buffer.readUInt32BE(0)) {
      const length = buffer.readUInt32BE(0);
      pdus.push({
        id: buffer.readUInt32BE(4),
        status: buffer.readUInt32BE(8),
        sequence: buffer.readUInt32BE(12),
        body: buffer.subarray(16, length),
      });
      buffer = buffer.subarray(length);
    }
  });
  socket.on("close", () => {
    ended = true;
  });
  socket.on("error", () => {
    ended = true;
  });
  return {
    socket,
    pdus,
    get ended() {
      return ended;
    },
    write: (bytes: Uint8Array) => socket.write(bytes),
    async waitFor(n: number, ms = 5000) {
      const until = Date.now() + ms;
      while (pdus.length < n) {
        if (Date.now() > until) throw new Error(`waited for ${n} PDUs, got ${pdus.length}`);
        await Bun.sleep(10);
      }
      return pdus.slice(0, n);
    },
    close: () => socket.destroy(),
  };
}

/** A C-octet string's bytes. */
export const cstr = (s: string) => Buffer.concat([Buffer.from(s, "latin1"), Buffer.of(0)]);

/** A bind body for the raw socket. */
export const bindBody = (systemId: string, password: string) =>
  Buffer.concat([cstr(systemId), cstr(password), cstr(""), Buffer.of(0x34, 0, 0), cstr("")]);

/** A submit_sm body for the raw socket: the mandatory fields, then `tlvs`. */
export function submitBody(o: {
  to: string;
  message: Uint8Array;
  dataCoding?: number;
  esmClass?: number;
  registeredDelivery?: number;
  tlvs?: Uint8Array;
  ton?: number;
}): Buffer {
  return Buffer.concat([
    cstr(""),
    Buffer.of(1, 1),
    cstr(""),
    Buffer.of(o.ton ?? 1, 1),
    cstr(o.to),
    Buffer.of(o.esmClass ?? 0, 0, 0),
    cstr(""),
    cstr(""),
    Buffer.of(o.registeredDelivery ?? 0, 0, o.dataCoding ?? 0, 0, o.message.length),
    Buffer.from(o.message),
    Buffer.from(o.tlvs ?? new Uint8Array(0)),
  ]);
}
