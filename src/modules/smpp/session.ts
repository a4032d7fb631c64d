// One ESME's connection: its bytes cut into PDUs, each worked on and answered by its sequence
// number (as many at once as the window allows), its bind, and the deliver_sm PDUs sent to it
// awaiting their responses. The listener (server.ts) owns the sessions and their timers.
import type net from "node:net";
import { AppError } from "../../core/errors";
import type { LogFields } from "../../lib/log";
import type { RateLimiter } from "../../http/rate-limit/types";
import type { BoundAccount, SmppCredentialService } from "./credentials";
import {
  CMD,
  commandName,
  encodePdu,
  HEADER_LENGTH,
  MAX_PDU_LENGTH,
  parseBind,
  parseCancel,
  parseQuery,
  parseSubmit,
  parseSubmitMulti,
  PduError,
  readHeader,
  STATUS,
  TAG,
  u8Value,
  Writer,
} from "./pdu";
import type { Submitter } from "./submit";

export type BindKind = "transmitter" | "receiver" | "transceiver";

/** What a session needs of its listener. */
export interface SessionHost {
  readonly limits: { failedBindDelayMs: number; responseTimeoutMs: number; window: number };
  readonly credentials: Pick<SmppCredentialService, "check">;
  readonly rateLimiter: Pick<RateLimiter, "guardAuth">;
  readonly submitter: Submitter;
  now(): number;
  log(level: "info" | "warn" | "error", message: string, fields: LogFields): void;
  count(id: number, status: number): void;
  bound(session: Session): void;
  closed(session: Session): void;
}

const BIND_RESP: Record<number, number> = {
  [CMD.bind_transmitter]: CMD.bind_transmitter_resp,
  [CMD.bind_receiver]: CMD.bind_receiver_resp,
  [CMD.bind_transceiver]: CMD.bind_transceiver_resp,
};
const BIND_KIND: Record<number, BindKind> = {
  [CMD.bind_transmitter]: "transmitter",
  [CMD.bind_receiver]: "receiver",
  [CMD.bind_transceiver]: "transceiver",
};
/** Commands Pigeon knows but does not carry out: answered with their own response, ESME_RINVCMDID. */
const UNSUPPORTED: Record<number, number> = {
  [CMD.replace_sm]: CMD.replace_sm_resp,
  [CMD.data_sm]: CMD.data_sm_resp,
  [CMD.deliver_sm]: CMD.deliver_sm_resp,
};

/** How long PDUs in work when the stream became unreadable may take to be answered before the connection closes. */
const END_WAIT_MS = 30_000;

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class Session {
  bound: BindKind | null = null;
  account: BoundAccount | null = null;
  private buffer: Buffer = Buffer.alloc(0);
  private working = 0;
  private paused = false;
  private nextSequence = 1;
  private readonly waiting = new Map<number, { resolve: (status: number | null) => void; timer: ReturnType<typeof setTimeout> }>();
  lastHeard: number;
  openedAt: number;
  closed = false;
  /** The bind being checked, if one is. */
  private binding: Promise<void> | null = null;
  /** The stream could not be cut into PDUs: nothing more is read. */
  private unreadable = false;
  /** The connection ends once nothing is in work. */
  private ending = false;
  /** Who waits for the work in progress to be answered (an unbind). */
  private idleWaiters: (() => void)[] = [];

  constructor(
    readonly socket: net.Socket,
    private readonly server: SessionHost,
  ) {
    this.lastHeard = this.openedAt = server.now();
    socket.on("data", (chunk: Buffer) => this.received(chunk));
    socket.on("error", () => this.close());
    socket.on("end", () => this.close());
    socket.on("close", () => this.close());
  }

  get address(): string {
    return this.socket.remoteAddress ?? "unknown";
  }

  /** The caller's address as the rate limits and the sign-in throttle key it (an SMPP client's own). */
  get clientAddress(): string {
    return `smpp:${this.address}`;
  }

  receives(): boolean {
    return this.bound === "receiver" || this.bound === "transceiver";
  }

  transmits(): boolean {
    return this.bound === "transmitter" || this.bound === "transceiver";
  }

  write(pdu: Uint8Array): void {
    if (!this.closed) this.socket.write(pdu);
  }

  answer(id: number, status: number, sequence: number, body?: Uint8Array): void {
    this.server.count(id, status);
    this.write(encodePdu(id, status, sequence, body));
  }

  /** Sends a deliver_sm; its response's status, or null when none came in time (or the session closed). */
  deliver(body: Uint8Array): Promise<number | null> {
    if (this.closed) return Promise.resolve(null);
    const sequence = this.nextSequence++;
    if (this.nextSequence > 0x7fffffff) this.nextSequence = 1;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiting.delete(sequence);
        resolve(null);
      }, this.server.limits.responseTimeoutMs);
      this.waiting.set(sequence, { resolve, timer });
      this.server.count(CMD.deliver_sm, 0);
      this.write(encodePdu(CMD.deliver_sm, 0, sequence, body));
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const w of this.waiting.values()) {
      clearTimeout(w.timer);
      w.resolve(null);
    }
    this.waiting.clear();
    this.socket.destroy();
    this.server.closed(this);
  }

  /**
   * Unbinds (asking the ESME to go): nothing more is read, what is in work is still answered, and
   * the connection ends once nothing is (at most END_WAIT_MS later).
   */
  unbind(): void {
    if (this.closed || this.ending) return;
    this.write(encodePdu(CMD.unbind, 0, this.nextSequence++));
    this.endAfterWork();
  }

  /** Reads no more; ends the connection once every PDU in work is answered, or after END_WAIT_MS. */
  private endAfterWork(): void {
    this.unreadable = true;
    this.buffer = Buffer.alloc(0);
    this.ending = true;
    this.endIfIdle();
    setTimeout(() => this.close(), END_WAIT_MS).unref?.();
  }

  private received(chunk: Buffer): void {
    if (this.unreadable) return;
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    this.drain();
  }

  private drain(): void {
    // A whole header first, even under an impossible command_length: its nack carries the PDU's sequence number.
    while (!this.closed && !this.unreadable && this.buffer.length >= HEADER_LENGTH) {
      const length = this.buffer.readUInt32BE(0);
      if (length < HEADER_LENGTH || length > MAX_PDU_LENGTH) {
        // The stream can no longer be cut into PDUs: answer what can be answered, then close.
        const sequence = this.buffer.readUInt32BE(12);
        this.answer(CMD.generic_nack, STATUS.ESME_RINVCMDLEN, sequence);
        this.server.log("info", "smpp closed a session: impossible command_length", { address: this.address, length });
        this.unreadable = true;
        this.buffer = Buffer.alloc(0);
        // What is in work is answered first (a submit stored is answered); then the connection ends.
        this.ending = true;
        this.endIfIdle();
        setTimeout(() => this.close(), END_WAIT_MS).unref?.();
        return;
      }
      if (this.buffer.length < length) return;
      const pdu = this.buffer.subarray(0, length);
      this.buffer = this.buffer.subarray(length);
      this.lastHeard = this.server.now();
      this.dispatch(Uint8Array.prototype.slice.call(pdu));
      if (this.working >= this.server.limits.window && !this.paused) {
        this.paused = true;
        this.socket.pause();
      }
    }
    if (this.buffer.length === 0) this.buffer = Buffer.alloc(0);
  }

  private dispatch(pdu: Uint8Array): void {
    const header = readHeader(pdu);
    const body = pdu.subarray(HEADER_LENGTH);
    const id = header.id >>> 0;
    if (id & 0x80000000) {
      this.responded(id, header.status, header.sequence);
      return;
    }
    this.server.count(id, -1);
    // Nothing after an unbind is read (the loop cutting PDUs stops here).
    if (id === CMD.unbind) this.unreadable = true;
    this.working++;
    this.handle(id, header.sequence, body)
      .catch((error) => {
        const status = error instanceof PduError ? error.status : STATUS.ESME_RSYSERR;
        if (!(error instanceof PduError))
          this.server.log("error", "smpp command failed", { command: commandName(id), error: String(error) });
        const resp = id in BIND_RESP ? BIND_RESP[id] : (id | 0x80000000) >>> 0;
        this.answer(commandName(resp) === "unknown" ? CMD.generic_nack : resp, status, header.sequence, responseBodyOf(resp));
      })
      .finally(() => {
        this.working--;
        if (this.paused && this.working < this.server.limits.window) {
          this.paused = false;
          this.socket.resume();
        }
        this.endIfIdle();
      });
  }

  /** Resolves once no PDU but the caller's own is in work. */
  private async othersDone(): Promise<void> {
    while (this.working > 1 && !this.closed) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
  }

  private endIfIdle(): void {
    for (const wake of this.idleWaiters.splice(0)) wake();
    if (!this.ending || this.working > 0 || this.closed) return;
    this.ending = false;
    this.socket.end();
    setTimeout(() => this.close(), 100).unref?.();
  }

  private responded(id: number, status: number, sequence: number): void {
    this.server.count(id, status);
    if (id === CMD.deliver_sm_resp || id === CMD.generic_nack) {
      const w = this.waiting.get(sequence);
      if (!w) return;
      this.waiting.delete(sequence);
      clearTimeout(w.timer);
      w.resolve(id === CMD.generic_nack && status === 0 ? STATUS.ESME_RSYSERR : status);
    } else if (id === CMD.unbind_resp) {
      // The ESME agreed to go: the connection ends once what is in work is answered.
      this.ending = true;
      this.endIfIdle();
    }
  }

  private async handle(id: number, sequence: number, body: Uint8Array): Promise<void> {
    const s = this.server;
    // Binds are checked one after another in the stream's order (a second one is then ESME_RALYBND),
    // and what follows a bind waits for its answer (its session is not bound before).
    if (id in BIND_RESP) {
      const before = this.binding;
      const done = before !== null ? before.then(() => this.bind(id, sequence, body)) : this.bind(id, sequence, body);
      this.binding = done.catch(() => {});
      return done;
    }
    if (this.binding !== null) await this.binding;
    if (id === CMD.enquire_link) return this.answer(CMD.enquire_link_resp, 0, sequence);
    if (id === CMD.unbind) {
      // What came before the unbind is answered first, then unbind_resp; nothing after it is read.
      this.unreadable = true;
      this.buffer = Buffer.alloc(0);
      await this.othersDone();
      this.answer(CMD.unbind_resp, 0, sequence);
      this.ending = true;
      return;
    }
    if (id in UNSUPPORTED) return this.answer(UNSUPPORTED[id], STATUS.ESME_RINVCMDID, sequence, responseBodyOf(UNSUPPORTED[id]));
    const known = id === CMD.submit_sm || id === CMD.submit_multi || id === CMD.query_sm || id === CMD.cancel_sm;
    if (!known) return this.answer(CMD.generic_nack, STATUS.ESME_RINVCMDID, sequence);
    const resp = (id | 0x80000000) >>> 0;
    if (!this.account || !this.transmits()) return this.answer(resp, STATUS.ESME_RINVBNDSTS, sequence, responseBodyOf(resp));
    const account = this.account;
    if (id === CMD.submit_sm) {
      const answer = await s.submitter.submit(account, this.clientAddress, parseSubmit(body));
      return this.answer(CMD.submit_sm_resp, answer.status, sequence, new Writer().cstring(answer.messageId).bytes());
    }
    if (id === CMD.submit_multi) {
      const result = await s.submitter.submitMulti(account, this.clientAddress, parseSubmitMulti(body));
      const w = new Writer().cstring(result.messageId).u8(result.unsuccessful.length);
      for (const u of result.unsuccessful) w.u8(u.address.ton).u8(u.address.npi).cstring(u.address.addr.slice(0, 20)).u32(u.status);
      const status = result.messageId === "" ? (result.unsuccessful[0]?.status ?? STATUS.ESME_RSUBMITFAIL) : STATUS.ESME_ROK;
      return this.answer(CMD.submit_multi_resp, status, sequence, w.bytes());
    }
    if (id === CMD.query_sm) {
      const q = parseQuery(body);
      const r = await s.submitter.query(account, q);
      const w = new Writer().cstring(q.messageId).cstring(r.finalDate).u8(r.state).u8(r.error);
      return this.answer(CMD.query_sm_resp, r.status, sequence, w.bytes());
    }
    const status = await s.submitter.cancel(account, parseCancel(body));
    return this.answer(CMD.cancel_sm_resp, status, sequence);
  }

  private async bind(id: number, sequence: number, body: Uint8Array): Promise<void> {
    const resp = BIND_RESP[id];
    const reply = (status: number) =>
      this.answer(
        resp,
        status,
        sequence,
        status === 0 ? new Writer().cstring("Pigeon").tlv(TAG.sc_interface_version, u8Value(0x34)).bytes() : undefined,
      );
    if (this.bound) return reply(STATUS.ESME_RALYBND);
    const bind = parseBind(body);
    try {
      this.account = await this.server.rateLimiter.guardAuth(this.clientAddress, () =>
        this.server.credentials.check(bind.systemId, bind.password),
      );
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      await sleep(this.server.limits.failedBindDelayMs);
      const which = error.data.smpp;
      const status =
        error.status === 429
          ? STATUS.ESME_RBINDFAIL
          : which === "unknown_system_id"
            ? STATUS.ESME_RINVSYSID
            : which === "wrong_password"
              ? STATUS.ESME_RINVPASWD
              : STATUS.ESME_RBINDFAIL;
      this.server.log("info", "smpp bind refused", { address: this.address, system_id: bind.systemId, reason: error.message });
      return reply(status);
    }
    this.bound = BIND_KIND[id];
    this.server.bound(this);
    this.server.log("info", "smpp bound", { address: this.address, system_id: bind.systemId, as: this.bound });
    reply(0);
  }
}

/** The body a refusal of `resp` carries: a message_id's empty string where the response has one. */
function responseBodyOf(resp: number): Uint8Array | undefined {
  if (resp === CMD.submit_sm_resp || resp === CMD.deliver_sm_resp || resp === CMD.data_sm_resp) return Uint8Array.of(0);
  if (resp === CMD.submit_multi_resp) return Uint8Array.of(0, 0);
  if (resp === CMD.query_sm_resp) return Uint8Array.of(0, 0, 0, 0);
  if (resp === CMD.bind_receiver_resp || resp === CMD.bind_transmitter_resp || resp === CMD.bind_transceiver_resp) return Uint8Array.of(0);
  return undefined;
}
