// The SMPP listener: TCP (and TLS) sessions of ESMEs (session.ts), each read PDU by PDU. A session binds as a
// transmitter, receiver or transceiver with its workspace's system_id and password; then submits
// (answered in any order, each by its sequence number, as many at once as the window allows) go
// through submit.ts, and the outbox's deliver_sm PDUs (deliveries.ts) go to its receiver binds.
// A malformed PDU is answered — generic_nack or the command's own error — and the session lives
// on; a command_length no PDU can have is answered and the connection closed, since the stream
// can no longer be read. No PDU holds more than MAX_PDU_LENGTH octets of memory.
import net from "node:net";
import tls from "node:tls";
import type { Clock } from "../../clock";
import type { LogFields, Logger } from "../../lib/log";
import type { RateLimiter } from "../../http/rate-limit/types";
import type { SmppCredentialService } from "./credentials";
import type { Receivers, SmppDeliveries } from "./deliveries";
import { commandName } from "./pdu";
import { CONCAT_WAIT_MS, type Submitter } from "./submit";
import { type BindKind, Session, type SessionHost, sleep } from "./session";

/** The documented timers and bounds (docs/smpp.md); tests pass shorter ones. */
export interface SmppLimits {
  /** A connection that has not bound this long is closed. */
  bindTimeoutMs: number;
  /** A bound session that has sent nothing (not even enquire_link) this long is unbound and closed. */
  idleTimeoutMs: number;
  /** A failed bind is answered after this wait. */
  failedBindDelayMs: number;
  /** A deliver_sm not answered this long is given back to the outbox. */
  responseTimeoutMs: number;
  /** PDUs of one session being worked on at once; past it, reading waits. */
  window: number;
  /** Sessions open at once, every ESME's. */
  maxSessions: number;
  /** A concatenated set not complete this long after its first part is answered ESME_RSUBMITFAIL. */
  concatWaitMs: number;
}

export const SMPP_LIMITS: SmppLimits = {
  bindTimeoutMs: 30_000,
  idleTimeoutMs: 120_000,
  failedBindDelayMs: 1000,
  responseTimeoutMs: 30_000,
  window: 64,
  maxSessions: 500,
  concatWaitMs: CONCAT_WAIT_MS,
};

/** How often the outbox is read while some receiver is bound (entries queued here wake it at once). */
const PUSH_EVERY_MS = 500;
/** How often a bind's credentials are checked again (a rotation closes binds made before it). */
const RECHECK_EVERY_MS = 30_000;

/** Counts for /metrics: binds open by kind, PDUs by command and status. */
export interface SmppCounters {
  pdus: Map<string, number>;
}

export interface SmppListenerOptions {
  host: string;
  port: number | null;
  tlsPort: number | null;
  tls: { cert: string; key: string } | null;
  clock: Clock;
  logger: Pick<Logger, "info" | "warn" | "error">;
  credentials: Pick<SmppCredentialService, "check" | "rotatedAt">;
  rateLimiter: Pick<RateLimiter, "guardAuth">;
  submitter: Submitter;
  deliveries: SmppDeliveries;
  limits?: Partial<SmppLimits>;
}

class SmppServer implements Receivers, SessionHost {
  readonly limits: SmppLimits;
  readonly sessions = new Set<Session>();
  private readonly receiving = new Map<string, Session[]>();
  private turn = 0;
  readonly counters: SmppCounters = { pdus: new Map() };
  private pushing = false;
  private again = false;

  constructor(readonly options: SmppListenerOptions) {
    this.limits = { ...SMPP_LIMITS, ...options.limits };
  }

  get credentials() {
    return this.options.credentials;
  }
  get rateLimiter() {
    return this.options.rateLimiter;
  }
  get submitter() {
    return this.options.submitter;
  }
  /** Sessions' timers run on the wall clock: they measure the network, not the business day. */
  now() {
    return Date.now();
  }
  log(level: "info" | "warn" | "error", message: string, fields: LogFields) {
    this.options.logger[level](message, fields);
  }

  /** Counts a PDU: a command received (status -1), or a response with its status. */
  count(id: number, status: number): void {
    const key = `${commandName(id)}\n${status}`;
    this.counters.pdus.set(key, (this.counters.pdus.get(key) ?? 0) + 1);
  }

  accept(socket: net.Socket): void {
    if (this.sessions.size >= this.limits.maxSessions) {
      socket.destroy();
      return;
    }
    socket.setNoDelay(true);
    this.sessions.add(new Session(socket, this));
  }

  bound(session: Session): void {
    if (!session.receives() || !session.account) return;
    const list = this.receiving.get(session.account.systemId) ?? [];
    list.push(session);
    this.receiving.set(session.account.systemId, list);
    this.wake();
  }

  closed(session: Session): void {
    this.sessions.delete(session);
    const id = session.account?.systemId;
    if (!id) return;
    const list = (this.receiving.get(id) ?? []).filter((s) => s !== session);
    if (list.length > 0) this.receiving.set(id, list);
    else this.receiving.delete(id);
  }

  systemIds(): string[] {
    return [...this.receiving.keys()];
  }

  deliver(systemId: string, body: Uint8Array): Promise<number | null> {
    const list = this.receiving.get(systemId);
    if (!list || list.length === 0) return Promise.resolve(null);
    const session = list[this.turn++ % list.length];
    return session.deliver(body);
  }

  /** Sends what is due now; a wake while it runs runs it once more after. */
  wake(): void {
    if (this.receiving.size === 0) return;
    if (this.pushing) {
      this.again = true;
      return;
    }
    this.pushing = true;
    this.options.deliveries
      .push(this)
      .catch((error) => this.log("error", "smpp outbox push failed", { error: String(error) }))
      .finally(() => {
        this.pushing = false;
        if (this.again) {
          this.again = false;
          this.wake();
        }
      });
  }

  /** Closes sessions past their timers, and binds whose credentials were issued again since. */
  async sweep(recheck: boolean): Promise<void> {
    const now = this.now();
    for (const s of this.sessions) {
      if (!s.bound && now - s.openedAt > this.limits.bindTimeoutMs) s.close();
      else if (s.bound && now - s.lastHeard > this.limits.idleTimeoutMs) {
        this.log("info", "smpp session idle: unbound", { address: s.address, system_id: s.account?.systemId });
        s.unbind();
      }
    }
    if (!recheck) return;
    const accounts = new Map<string, Session[]>();
    for (const s of this.sessions) if (s.account) accounts.set(s.account.systemId, [...(accounts.get(s.account.systemId) ?? []), s]);
    for (const [systemId, list] of accounts) {
      const at = await this.credentials.rotatedAt(systemId);
      for (const s of list) if (at === null || at !== s.account?.rotatedAt) s.unbind();
    }
  }

  /** Binds open now, by kind. */
  binds(): Record<BindKind, number> {
    const out = { transmitter: 0, receiver: 0, transceiver: 0 };
    for (const s of this.sessions) if (s.bound) out[s.bound]++;
    return out;
  }
}

export interface SmppListener {
  ports: { plain: number | null; tls: number | null };
  describe(): string;
  stop(graceMs: number): Promise<void>;
  binds(): Record<BindKind, number>;
  counters: SmppCounters;
  /** Unbinds every session of `systemId` (its credentials were issued again). */
  unbindAll(systemId: string): void;
}

export async function startSmppListener(options: SmppListenerOptions): Promise<SmppListener> {
  const server = new SmppServer(options);
  const listening: net.Server[] = [];
  const listen = (srv: net.Server, port: number) =>
    new Promise<number>((resolve, reject) => {
      srv.once("error", reject);
      srv.listen(port, options.host, () => resolve((srv.address() as net.AddressInfo).port));
    });
  const ports = { plain: null as number | null, tls: null as number | null };
  if (options.port !== null) {
    const plain = net.createServer((socket) => server.accept(socket));
    ports.plain = await listen(plain, options.port);
    listening.push(plain);
  }
  if (options.tlsPort !== null && options.tls) {
    const secure = tls.createServer({ cert: options.tls.cert, key: options.tls.key }, (socket) => server.accept(socket));
    secure.on("tlsClientError", () => {});
    ports.tls = await listen(secure, options.tlsPort);
    listening.push(secure);
  }
  options.deliveries.onWake(() => server.wake());
  let ticks = 0;
  const timer = setInterval(() => {
    ticks++;
    server.wake();
    const recheck = ticks % Math.max(1, Math.round(RECHECK_EVERY_MS / PUSH_EVERY_MS)) === 0;
    server.sweep(recheck).catch((error) => server.log("error", "smpp sweep failed", { error: String(error) }));
  }, PUSH_EVERY_MS);
  timer.unref?.();
  return {
    ports,
    counters: server.counters,
    binds: () => server.binds(),
    describe: () =>
      [
        ports.plain !== null ? `smpp on ${options.host}:${ports.plain}` : null,
        ports.tls !== null ? `smpp over TLS on ${options.host}:${ports.tls}` : null,
      ]
        .filter(Boolean)
        .join(", "),
    unbindAll(systemId: string) {
      for (const s of server.sessions) if (s.account?.systemId === systemId) s.unbind();
    },
    async stop(graceMs: number) {
      clearInterval(timer);
      options.deliveries.onWake(null);
      for (const srv of listening) srv.close();
      for (const s of server.sessions) s.unbind();
      const until = Date.now() + graceMs;
      while (server.sessions.size > 0 && Date.now() < until) await sleep(20);
      for (const s of [...server.sessions]) s.close();
      options.submitter.close();
    },
  };
}
