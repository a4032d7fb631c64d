// The SMTP listener of the email bridge (docs/email.md): Nodemailer's smtp-server speaking the
// protocol, this file deciding. Who may send: a sender signed in with AUTH PLAIN or LOGIN (an API
// key and its secret), never before TLS unless PIGEON_SMTP_PLAIN_LOOPBACK allows it on loopback;
// or, without AUTH, a sender on a workspace's allowlist writing to its secret address. Anyone else
// is refused at MAIL FROM or RCPT TO: the listener never relays. Each RCPT TO is resolved and
// checked as a send (bridge.ts); after DATA each recipient's send is committed before the 250.
import net from "node:net";
import tls from "node:tls";
import { simpleParser } from "mailparser";
import {
  SMTPServer,
  type SMTPServerAddress,
  type SMTPServerAuthentication,
  type SMTPServerAuthenticationResponse,
  type SMTPServerDataStream,
  type SMTPServerSession,
} from "smtp-server";
import { sha256Hex, timeOrderedId } from "../../lib/tokens";
import type { Clock } from "../../clock";
import type { LogFn } from "../../lib/log";
import { DEFAULT_TRUSTED_PROXIES, isTrustedPeer, parseProxyList } from "../../lib/trusted-proxies";
import { secretTokenOf, splitAddress } from "./address";
import type { Bridge, Resolved, Sender, SmtpAnswer } from "./bridge";
import { smsText } from "./content";
import { createTlsTerminator, type TlsMaterial, tlsOptions, type TlsTerminator, upgradeThrough } from "./tls";

/** The listener's limits, each in docs/email.md. */
export const SMTP_LIMITS = {
  /** Bytes of one message (the SIZE announced); a larger one is refused with 552. */
  messageBytes: 1024 * 1024,
  /** RCPT TO per message; more are answered 452 (the sending server sends the rest later). */
  recipients: 50,
  /** Connections open at once from one address. */
  perAddress: 10,
  /** Connections open at once in all. */
  total: 200,
  /** Silence after which a session is closed. */
  idleMs: 60_000,
  /** The longest a session may last. */
  sessionMs: 10 * 60_000,
  /** Bytes of messages held while being read, all sessions together; past it DATA is answered 452. */
  bufferedBytes: 16 * 1024 * 1024,
  /** Messages one address may send a minute before MAIL FROM is answered 451. */
  messagesPerMinute: 600,
};

export interface SmtpListenerOptions {
  bridge: Bridge;
  /** The server's clock (the flood throttle counts messages per minute by it). */
  clock: Clock;
  log: LogFn;
  host: string;
  /** The plain port (STARTTLS offered when `tls` is given); null: none. */
  port: number | null;
  /** The implicit-TLS port; null: none. */
  tlsPort: number | null;
  tls: TlsMaterial | null;
  /** Loopback clients may sign in before TLS. */
  plainLoopback: boolean;
  limits?: Partial<typeof SMTP_LIMITS>;
  /** Tests: how long the STARTTLS terminator holds each connection back (see createTlsTerminator). */
  terminatorDelayMs?: number;
}

/** What one session has learnt, beyond smtp-server's own session. */
interface SessionState {
  sender: Sender | null;
  /** The mail's sender for a secret address (no AUTH): the address and the workspace it writes to. */
  secret: Sender | null;
  recipients: Resolved[];
}

type SmtpError = Error & { responseCode: number };

const refusal = (a: SmtpAnswer): SmtpError => Object.assign(new Error(`${a.enhanced} ${a.text}`), { responseCode: a.code });
const say = (code: number, enhanced: string, text: string) => refusal({ code, enhanced, text });

const LOOPBACK = parseProxyList(DEFAULT_TRUSTED_PROXIES);
export const isLoopback = (address: string | undefined) => isTrustedPeer(LOOPBACK, address);

/** Counts that forget: messages per address in the current minute, at most `max` addresses kept. */
function minuteCounter(max: number, now: () => number) {
  let minute = 0;
  let counts = new Map<string, number>();
  return (address: string): number => {
    const current = Math.floor(now() / 60_000);
    if (current !== minute || counts.size >= max) {
      minute = current;
      counts = new Map();
    }
    const next = (counts.get(address) ?? 0) + 1;
    counts.set(address, next);
    return next;
  };
}

/**
 * The bytes of messages being read, all sessions together, within `budget`: a reader that would
 * pass it stops keeping bytes, so the listener's memory stays bounded however many send at once.
 */
function byteBudget(budget: number) {
  let held = 0;
  return {
    take: (n: number) => {
      if (held + n > budget) return false;
      held += n;
      return true;
    },
    give: (n: number) => {
      held -= n;
    },
    held: () => held,
  };
}

type Budget = ReturnType<typeof byteBudget>;

/**
 * Reads a message's bytes up to `max`; past it (or past the listener's budget) the rest is drained
 * and dropped, and the answer says which. The bytes kept count against the budget until `release`.
 */
async function readCapped(
  stream: SMTPServerDataStream,
  max: number,
  budget: Budget,
): Promise<{ bytes: Buffer; over: "size" | "budget" | null; release: () => void }> {
  const chunks: Buffer[] = [];
  let length = 0;
  let over: "size" | "budget" | null = null;
  const drop = () => {
    budget.give(length);
    chunks.length = 0;
    length = 0;
  };
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    if (over) continue;
    if (length + chunk.length > max) over = "size";
    else if (!budget.take(chunk.length)) over = "budget";
    if (over) {
      drop();
      continue;
    }
    chunks.push(chunk);
    length += chunk.length;
  }
  if (!over && stream.sizeExceeded) {
    over = "size";
    drop();
  }
  const bytes = Buffer.concat(chunks);
  let released = false;
  return {
    bytes,
    over,
    release: () => {
      if (released) return;
      released = true;
      budget.give(length);
    },
  };
}

/** Recipients sent together: the same sender and, for a reply, the same way back. */
function groupsOf(recipients: Resolved[]): Resolved[][] {
  const groups = new Map<string, Resolved[]>();
  for (const r of recipients) {
    const key = `${r.sender.credentials["x-api-key"]}|${r.via ? `${r.via.channel}:${r.via.deviceId}:${r.via.simNumber}` : ""}`;
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  return [...groups.values()];
}

export interface SmtpListener {
  /** The ports bound ("smtp on 127.0.0.1:2525, smtps on …"). */
  describe(): string;
  ports: { smtp: number | null; smtps: number | null };
  stop(graceMs: number): Promise<void>;
}

export async function startSmtpListener(options: SmtpListenerOptions): Promise<SmtpListener> {
  const { bridge, log } = options;
  const limits = { ...SMTP_LIMITS, ...options.limits };
  const states = new Map<string, SessionState>();
  const perAddress = new Map<string, number>();
  const messagesThisMinute = minuteCounter(10_000, () => options.clock.now());
  const budget = byteBudget(limits.bufferedBytes);
  const stateOf = (session: SMTPServerSession): SessionState => {
    const known = states.get(session.id);
    if (known) return known;
    const state: SessionState = { sender: null, secret: null, recipients: [] };
    states.set(session.id, state);
    return state;
  };

  const handlers = {
    onConnect(session: SMTPServerSession, done: (error?: Error | null) => void) {
      const address = session.remoteAddress;
      const open = (perAddress.get(address) ?? 0) + 1;
      if (open > limits.perAddress) return done(say(421, "4.7.0", `Too many connections from ${address}; try again later`));
      perAddress.set(address, open);
      stateOf(session);
      done();
    },
    onClose(session: SMTPServerSession) {
      if (!states.delete(session.id)) return;
      const open = (perAddress.get(session.remoteAddress) ?? 1) - 1;
      if (open <= 0) perAddress.delete(session.remoteAddress);
      else perAddress.set(session.remoteAddress, open);
    },
    onAuth(
      auth: SMTPServerAuthentication,
      session: SMTPServerSession,
      done: (error: Error | null | undefined, response?: SMTPServerAuthenticationResponse) => void,
    ) {
      if (!session.secure && !(options.plainLoopback && isLoopback(session.remoteAddress)))
        return done(say(538, "5.7.11", "Encryption required: send STARTTLS first (or use the implicit-TLS port)"));
      if (auth.method !== "PLAIN" && auth.method !== "LOGIN") return done(say(504, "5.5.4", "Only AUTH PLAIN and LOGIN are offered"));
      bridge
        .signIn(session.remoteAddress, auth.username ?? "", auth.password ?? "")
        .then((result) => {
          if ("code" in result) return done(refusal(result));
          stateOf(session).sender = result;
          done(null, { user: result.credentials["x-api-key"] });
        })
        .catch((error) => {
          log("smtp sign-in failed", error);
          done(say(454, "4.3.0", "Sign-in is unavailable just now; try again later"));
        });
    },
    onMailFrom(address: SMTPServerAddress, session: SMTPServerSession, done: (error?: Error | null) => void) {
      const state = stateOf(session);
      state.recipients = [];
      state.secret = null;
      if (messagesThisMinute(session.remoteAddress) > limits.messagesPerMinute)
        return done(say(451, "4.7.1", `Too many messages from ${session.remoteAddress} this minute; try again later`));
      if (state.sender) return done();
      // Without AUTH only a sender some workspace lets write unsigned (its secret address, replies) may go on.
      bridge
        .mayWriteUnsigned(address.address)
        .then((allowed) =>
          allowed ? done() : done(say(530, "5.7.0", "Authentication required: sign in with AUTH (an API key and its secret)")),
        )
        .catch((error) => {
          log("smtp MAIL FROM check failed", error);
          done(say(451, "4.3.0", "Try again later"));
        });
    },
    onRcptTo(address: SMTPServerAddress, session: SMTPServerSession, done: (error?: Error | null) => void) {
      const state = stateOf(session);
      if (state.recipients.length >= limits.recipients)
        return done(say(452, "4.5.3", `At most ${limits.recipients} recipients a message; send the rest in another`));
      void (async () => {
        const { local } = splitAddress(address.address);
        const from = session.envelope.mailFrom ? session.envelope.mailFrom.address : "";
        const reply = await bridge.replyRecipient(address.address, local, from, state.sender);
        if (reply) {
          if ("code" in reply) return done(refusal(reply));
          state.recipients.push(reply);
          return done();
        }
        let sender = state.sender;
        let rest = local;
        if (!sender) {
          const secret = secretTokenOf(local);
          const found = secret ? await bridge.secretSender(secret.token, from) : null;
          if (!found || !secret)
            return done(say(550, "5.7.1", "Relaying denied: sign in with AUTH, or write to a secret address that allows this sender"));
          if (state.secret && state.secret.workspaceId !== found.workspaceId)
            return done(say(550, "5.7.1", "One message goes to one workspace's secret address"));
          state.secret = found;
          sender = found;
          rest = secret.rest;
        }
        const resolved = await bridge.recipient(sender, address.address, rest);
        if ("code" in resolved) return done(refusal(resolved));
        state.recipients.push(resolved);
        done();
      })().catch((error) => {
        log("smtp RCPT TO check failed", error);
        done(say(451, "4.3.0", "Try again later"));
      });
    },
    onData(stream: SMTPServerDataStream, session: SMTPServerSession, done: (error?: Error | null, message?: string) => void) {
      const state = stateOf(session);
      void (async () => {
        const read = await readCapped(stream, limits.messageBytes, budget);
        try {
          await afterData(read);
        } finally {
          read.release();
        }
      })().catch((error) => {
        log("smtp DATA failed", error);
        done(say(451, "4.3.0", "The message could not be stored; try again later"));
      });

      async function afterData(read: Awaited<ReturnType<typeof readCapped>>) {
        const { bytes, over } = read;
        if (over === "size") return done(say(552, "5.3.4", `The message is over ${limits.messageBytes} bytes`));
        if (over === "budget") return done(say(452, "4.3.1", "The server is busy reading other mail; try again later"));
        if (state.recipients.length === 0) return done(say(503, "5.5.1", "No valid recipients"));
        const mail = await simpleParser(bytes, { skipHtmlToText: false, skipTextToHtml: true, skipImageLinks: true });
        // The same mail again (a sending server's retry) has the same key: its sends replay.
        const id = mail.messageId?.trim() || `sha256:${sha256Hex(bytes.toString("latin1"))}`;
        const answers: SmtpAnswer[] = [];
        for (const group of groupsOf(state.recipients)) {
          const { sender, via } = group[0];
          const { text } = smsText(mail, sender.content, sender.lengthCap);
          if (!text) return done(say(554, "5.6.0", "The message has no text to send (an empty subject and body)"));
          const phones = group.flatMap((r) => r.phones);
          const origin = {
            key: `${sender.workspaceId}\n${id}`,
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
            subject: mail.subject ?? "",
          };
          answers.push(await bridge.deliver(sender, origin, phones, text, via));
        }
        state.recipients = [];
        const failed = answers.find((a) => a.code >= 400 && a.code < 500) ?? (answers.every((a) => a.code >= 500) ? answers[0] : undefined);
        if (failed) return done(refusal(failed));
        done(null, answers.map((a) => `${a.enhanced} ${a.text}`).join("; "));
      }
    },
  };

  const common = {
    ...handlers,
    logger: false as const,
    banner: "Pigeon email-to-SMS",
    size: limits.messageBytes,
    authMethods: ["PLAIN", "LOGIN"],
    // The sign-in rule (TLS, or loopback when allowed) is this file's, in onAuth; so is the rule of
    // who may go on without signing in (onMailFrom).
    allowInsecureAuth: true,
    authOptional: true,
    disabledCommands: [] as string[],
    maxClients: limits.total,
    socketTimeout: limits.idleMs,
    closeTimeout: 5_000,
    disableReverseLookup: true,
  };

  let terminator: TlsTerminator | null = null;
  const servers: SMTPServer[] = [];
  const rawServers: net.Server[] = [];
  const sessionTimers = new Set<ReturnType<typeof setTimeout>>();

  /** Every connection is closed at the session's time limit; STARTTLS goes through the terminator. */
  function watchConnections(server: SMTPServer, startTls: boolean) {
    const inner = server as unknown as {
      connect(socket: net.Socket, opts: unknown): void;
      connections: Set<{ send(code: number, text: string): void; close(): void; once(e: string, f: () => void): void }>;
    };
    const connect = inner.connect.bind(inner);
    inner.connect = (socket, opts) => {
      connect(socket, opts);
      const connection = [...inner.connections].at(-1);
      if (!connection) return;
      if (startTls && terminator) upgradeThrough(connection, terminator);
      const timer = setTimeout(() => {
        sessionTimers.delete(timer);
        connection.send(421, "4.4.2 Session time limit reached; closing");
        connection.close();
      }, limits.sessionMs);
      sessionTimers.add(timer);
      socket.once("close", () => {
        clearTimeout(timer);
        sessionTimers.delete(timer);
      });
    };
  }

  const listenOn = (server: net.Server, port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, options.host, () => resolve((server.address() as net.AddressInfo).port));
    });

  const ports = { smtp: null as number | null, smtps: null as number | null };
  try {
    if (options.port !== null) {
      if (options.tls) terminator = await createTlsTerminator(options.tls, options.terminatorDelayMs ?? 0);
      const plain = new SMTPServer({
        ...common,
        ...(options.tls ? tlsOptions(options.tls) : {}),
        hideSTARTTLS: !options.tls,
        disabledCommands: options.tls ? [] : ["STARTTLS"],
      });
      plain.on("error", (error) => log("smtp listener error", error));
      watchConnections(plain, !!options.tls);
      servers.push(plain);
      ports.smtp = await listenOn((plain as unknown as { server: net.Server }).server, options.port);
    }
    if (options.tlsPort !== null && options.tls) {
      // Implicit TLS: our TLS server terminates it, and smtp-server reads the decrypted socket as secured.
      const secured = new SMTPServer({ ...common, secure: true, secured: true, hideSTARTTLS: true });
      secured.on("error", (error) => log("smtps listener error", error));
      watchConnections(secured, false);
      servers.push(secured);
      const tlsServer = tls.createServer(tlsOptions(options.tls), (socket) => {
        (secured as unknown as { connect(s: net.Socket, o: unknown): void }).connect(socket, { id: timeOrderedId() });
      });
      tlsServer.on("tlsClientError", (_error, socket) => socket.destroy());
      tlsServer.maxConnections = limits.total;
      rawServers.push(tlsServer);
      ports.smtps = await listenOn(tlsServer, options.tlsPort);
    }
  } catch (error) {
    for (const s of servers) s.close();
    for (const s of rawServers) s.close();
    await terminator?.close();
    throw error;
  }

  return {
    ports,
    describe: () =>
      [
        ports.smtp !== null ? `smtp on ${options.host}:${ports.smtp}` : null,
        ports.smtps !== null ? `smtps on ${options.host}:${ports.smtps}` : null,
      ]
        .filter(Boolean)
        .join(", "),
    async stop(graceMs: number) {
      for (const timer of sessionTimers) clearTimeout(timer);
      const closing = [
        ...servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))),
        ...rawServers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))),
      ];
      await Promise.race([Promise.all(closing), new Promise((resolve) => setTimeout(resolve, graceMs))]);
      await terminator?.close();
    },
  };
}
