// TLS for the SMTP listener, both ways a mail client asks for it: STARTTLS on the plain port and
// implicit TLS on PIGEON_SMTPS_PORT.
//
// smtp-server upgrades a connection for STARTTLS by wrapping its socket in a server-side
// tls.TLSSocket. The runtime we ship on cannot do that to an accepted socket (the handshake never
// starts; oven-sh/bun issue 21541), while its tls.createServer terminates TLS well. So each
// connection's `upgrade` is replaced: after the 220 reply, the connection's raw bytes are piped to
// a TLS server of ours on a loopback port, and the decrypted socket it accepts becomes the
// connection's socket, with the session state reset as RFC 3207 asks (what smtp-server's own
// upgrade does). This leans on smtp-server's connection internals (_socket, _parser,
// _createParser, _upgrading, _resetSession, _armTimeout, _onCloseEvent, _onError, _refuse), so the
// package's version is pinned; test/email/smtp.test.ts runs STARTTLS with Python's smtplib and with
// swaks, and fails if an upgrade of the package changes them.
import net from "node:net";
import tls from "node:tls";

export interface TlsMaterial {
  cert: string;
  key: string;
}

/** The server-side TLS options both ways share. */
export const tlsOptions = (material: TlsMaterial): tls.TlsOptions => ({
  cert: material.cert,
  key: material.key,
  minVersion: "TLSv1.2",
});

/** How long a STARTTLS handshake may take before the connection is dropped. */
const HANDSHAKE_MS = 15_000;

export interface TlsTerminator {
  /** Pipes `raw` through the terminator; `done` gets the decrypted socket, or the error of a failed handshake. */
  open(raw: net.Socket, done: (error: Error | null, secure: tls.TLSSocket | null) => void): void;
  close(): Promise<void>;
}

/** The loopback TLS server STARTTLS connections are handed to (see the file's head). */
/**
 * `delayMs` holds each connection back before it is joined to the terminator (tests: a client's
 * ClientHello that comes first must be kept, not lost).
 */
export async function createTlsTerminator(material: TlsMaterial, delayMs = 0): Promise<TlsTerminator> {
  // Each waiting handshake, by the local port of the loopback connection that carries it.
  const waiting = new Map<number, (error: Error | null, secure: tls.TLSSocket | null) => void>();
  const server = tls.createServer(tlsOptions(material), (secure) => {
    // What the client sends right after the handshake is kept until the connection's new parser
    // reads the socket (see Held): pausing is not enough on every runtime.
    holdData(secure);
    const done = waiting.get(secure.remotePort ?? -1);
    if (!done) return void secure.destroy();
    waiting.delete(secure.remotePort ?? -1);
    done(null, secure);
  });
  server.on("tlsClientError", (error, socket) => {
    const port = socket.remotePort ?? -1;
    const done = waiting.get(port);
    waiting.delete(port);
    socket.destroy();
    done?.(error, null);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as net.AddressInfo).port;

  return {
    open(raw, done) {
      let settled = false;
      const finish = (error: Error | null, secure: tls.TLSSocket | null) => {
        if (settled) return void secure?.destroy();
        settled = true;
        clearTimeout(timer);
        if (error) {
          inner.destroy();
          raw.destroy();
        }
        done(error, secure);
      };
      const timer = setTimeout(() => finish(new Error("TLS handshake timed out"), null), HANDSHAKE_MS);
      const inner = net.connect(port, "127.0.0.1");
      inner.once("connect", () => {
        const join = () => {
          waiting.set(inner.localPort ?? -1, finish);
          pipeHeld(raw, inner);
          inner.pipe(raw);
        };
        if (delayMs > 0) setTimeout(join, delayMs);
        else join();
      });
      inner.on("error", (error) => finish(error, null));
      inner.on("close", () => {
        waiting.delete(inner.localPort ?? -1);
        if (!raw.destroyed) raw.destroy();
      });
      raw.on("close", () => {
        if (!inner.destroyed) inner.destroy();
        if (!settled) finish(new Error("The client left during the TLS handshake"), null);
      });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A socket whose data is being kept for its next reader (holdData). */
const HELD = Symbol("held");
type Held = { [HELD]?: { chunks: Buffer[]; keep: (chunk: Buffer) => void } };

/** Starts keeping what `socket` reads, until pipeHeld hands it on. */
function holdData(socket: net.Socket): void {
  const chunks: Buffer[] = [];
  const keep = (chunk: Buffer) => void chunks.push(chunk);
  (socket as Held)[HELD] = { chunks, keep };
  socket.on("data", keep);
}

/** Pipes `socket` into `to`, what it kept first (in order, nothing lost in between). */
function pipeHeld(socket: net.Socket, to: NodeJS.WritableStream): void {
  const held = (socket as Held)[HELD];
  if (held) {
    socket.off("data", held.keep);
    delete (socket as Held)[HELD];
    for (const chunk of held.chunks) to.write(chunk);
  }
  socket.pipe(to);
}

/** The parts of smtp-server's connection the replacement upgrade uses. */
interface SmtpConnectionInternals {
  _socket: net.Socket | tls.TLSSocket;
  _parser: (NodeJS.WritableStream & { isClosed?: boolean }) | null;
  _createParser(): NodeJS.WritableStream;
  _upgrading: boolean;
  secure: boolean;
  tlsOptions: unknown;
  hostNameAppearsAs: unknown;
  openingCommand: unknown;
  session: { secure: boolean; user: unknown; tlsOptions: unknown; servername?: string };
  _server: { onSecure(socket: unknown, session: unknown, done: (error?: Error | null) => void): void };
  _resetSession(): void;
  _armTimeout(socket?: net.Socket): void;
  _onCloseEvent(hadError: boolean): void;
  _onError(error: Error): void;
  _refuse(error: Error): void;
  upgrade(callback: () => void, secureCallback?: () => void): void;
}

/** Makes `connection` (an smtp-server connection) answer STARTTLS through `terminator`. */
export function upgradeThrough(connection: unknown, terminator: TlsTerminator): void {
  const c = connection as SmtpConnectionInternals;
  c.upgrade = (callback, secureCallback) => {
    const raw = c._socket as net.Socket;
    raw.unpipe(c._parser as NodeJS.WritableStream);
    // What the old parser still holds came before the handshake, in plaintext: it must never run
    // inside the TLS session (STARTTLS command injection). The parser is retired and a new one
    // will only ever read the decrypted socket.
    if (c._parser) c._parser.isClosed = true;
    c._parser = c._createParser() as SmtpConnectionInternals["_parser"];
    c._upgrading = true;
    setImmediate(callback);
    raw.removeAllListeners("data");
    raw.removeAllListeners("end");
    raw.removeAllListeners("close");
    raw.removeAllListeners("timeout");
    // Kept until the terminator's connection is up: the client's ClientHello may come before it,
    // and a stream left flowing with no reader would drop it (the handshake would then hang).
    holdData(raw);
    terminator.open(raw, (error, secure) => {
      if (error || !secure) return c._onError(error ?? new Error("TLS handshake failed"));
      if (!c._parser) return void secure.destroy();
      secure.once("close", (hadError) => c._onCloseEvent(hadError));
      secure.on("error", (e) => c._onError(e));
      c._armTimeout(secure);
      c.session.secure = c.secure = true;
      c._socket = secure;
      c._upgrading = false;
      // RFC 3207 4.2: nothing learnt before the handshake counts after it.
      c.session.user = false;
      c.hostNameAppearsAs = false;
      c.openingCommand = false;
      c._resetSession();
      c.session.tlsOptions = c.tlsOptions = secure.getCipher();
      c._server.onSecure(secure, c.session, (refused) => {
        if (!c._parser) return;
        if (refused) return c._refuse(refused);
        pipeHeld(secure, c._parser as NodeJS.WritableStream);
        secureCallback?.();
      });
    });
  };
}
