// Debian's Kannel (bearerbox and smsbox) in front of Pigeon's SMPP listener, configured as
// docs/smpp.md says: its smsc group binds to Pigeon as a transceiver; its smsbox takes sendsms
// requests and posts what it receives to `getUrl`. Everything on loopback, in a temp dir. The
// judge of test/smpp/kannel.test.ts and the peer of the bench's SMPP part. With `fakeSmsc`, Kannel
// alone: its smsc group is Kannel's own fake SMSC (kannel-extras' fakesmsc, connected to
// bearerbox), the peer the bench measures Pigeon's HTTP send against.
import type { Subprocess } from "bun";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const BEARERBOX = "/usr/sbin/bearerbox";
export const SMSBOX = "/usr/sbin/smsbox";
/** kannel-extras' fake SMSC: connects to bearerbox's fake smsc port and prints each message it is sent. */
export const FAKESMSC = "/usr/lib/kannel/test/fakesmsc";
const HOST = "127.0.0.1";
const ADMIN_PASSWORD = "kannel-admin";
const USER = { username: "shop", password: "shop-secret" };

/** A loopback port free now. */
export function freePort(): number {
  const probe = Bun.listen({ hostname: HOST, port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  return port;
}

export interface KannelOptions {
  /** Pigeon's SMPP listener and its credentials: Kannel's SMSC. */
  smppPort?: number;
  systemId?: string;
  password?: string;
  /** Kannel's own fake SMSC instead of Pigeon (the bench's peer): no SMPP at all. */
  fakeSmsc?: boolean;
  /** smsbox's sms-service get-url for each SMS Kannel receives (Kannel's escapes: %p sender, %P receiver, %a text); none: a fixed reply text. */
  getUrl?: string;
  /** Outstanding submits Kannel keeps (its max-pending-submits; docs/smpp.md's 64 unless given). */
  window?: number;
}

export interface Kannel {
  /** smsbox's sendsms URL with the user's credentials, ready for &to=…&text=… */
  sendsmsUrl: string;
  /** smsbox's sendsms with `params` (to, text, coding…); its HTTP status and answer. */
  sendsms(params: Record<string, string>): Promise<{ status: number; body: string }>;
  /** bearerbox's status page. */
  status(): Promise<string>;
  /** Whether Kannel's smsc is bound to Pigeon and its smsbox connected. */
  online(): Promise<boolean>;
  /** The tail of both boxes' logs. */
  logs(): string;
  /** With `fakeSmsc`: the messages the fake SMSC has been sent so far. */
  delivered(): number;
  stop(): Promise<void>;
}

/** Kannel's smsc group for Pigeon's listener, as docs/smpp.md gives it. */
function smppGroup(o: KannelOptions): string {
  return `group = smsc
smsc = smpp
smsc-id = pigeon
host = ${HOST}
port = ${o.smppPort}
transceiver-mode = true
smsc-username = ${o.systemId}
smsc-password = ${o.password}
system-type = ""
source-addr-ton = 1
source-addr-npi = 1
dest-addr-ton = 1
dest-addr-npi = 1
enquire-link-interval = 30
max-pending-submits = ${o.window ?? 64}
msg-id-type = 0x00
reconnect-delay = 1
`;
}

/** Kannel's fake smsc group: bearerbox listens on `port` for fakesmsc. */
function fakeSmscGroup(port: number): string {
  return `group = smsc
smsc = fake
smsc-id = fake
port = ${port}
`;
}

function config(dir: string, o: KannelOptions, ports: { admin: number; smsbox: number; sendsms: number; fake: number }): string {
  return `group = core
admin-port = ${ports.admin}
admin-interface = ${HOST}
admin-password = ${ADMIN_PASSWORD}
smsbox-port = ${ports.smsbox}
smsbox-interface = ${HOST}
log-file = "${join(dir, "bearerbox.log")}"
log-level = 1
store-type = file
store-location = "${join(dir, "kannel.store")}"
dlr-storage = internal

${o.fakeSmsc ? fakeSmscGroup(ports.fake) : smppGroup(o)}
group = smsbox
bearerbox-host = ${HOST}
bearerbox-port = ${ports.smsbox}
sendsms-port = ${ports.sendsms}
sendsms-interface = ${HOST}
mo-recode = true
log-file = "${join(dir, "smsbox.log")}"
log-level = 1

group = sendsms-user
username = ${USER.username}
password = ${USER.password}
default-sender = "Pigeon"
max-messages = 10
concatenation = true

group = sms-service
keyword = default
catch-all = true
max-messages = 0
${o.getUrl ? `get-url = "${o.getUrl}"` : "text = ok"}
`;
}

const opens = (port: number) =>
  Bun.connect({ hostname: HOST, port, socket: { data() {} } }).then(
    (socket) => {
      socket.end();
      return true;
    },
    () => false,
  );

async function until(what: string, ready: () => Promise<boolean>, logs: () => string) {
  for (let i = 0; i < 200; i++) {
    if (await ready()) return;
    await Bun.sleep(50);
  }
  throw new Error(`Kannel: ${what} did not open\n${logs()}`);
}

export async function startKannel(o: KannelOptions): Promise<Kannel> {
  const dir = mkdtempSync(join(tmpdir(), "pigeon-kannel-"));
  const ports = { admin: freePort(), smsbox: freePort(), sendsms: freePort(), fake: freePort() };
  const file = join(dir, "kannel.conf");
  writeFileSync(file, config(dir, o, ports));
  const log = (name: string) => {
    const path = join(dir, name);
    return existsSync(path) ? readFileSync(path, "utf8").slice(-4000) : "(no log)";
  };
  const logs = () => `bearerbox: ${log("bearerbox.log")}\nsmsbox: ${log("smsbox.log")}`;
  const boxes: Subprocess[] = [];
  const spawn = (bin: string) =>
    boxes.push(Bun.spawn([bin, file], { cwd: dir, env: { PATH: process.env.PATH ?? "" }, stdout: "ignore", stderr: "ignore" }));
  // smsbox gives up when bearerbox does not take it at once: bearerbox first.
  spawn(BEARERBOX);
  await until("bearerbox's smsbox port", () => opens(ports.smsbox), logs);
  const smscOut = join(dir, "fakesmsc.out");
  if (o.fakeSmsc) {
    await until("bearerbox's fake smsc port", () => opens(ports.fake), logs);
    // -m 0: it sends nothing of its own; it logs "Got message" for each one bearerbox sends it.
    boxes.push(
      Bun.spawn([FAKESMSC, "-H", HOST, "-r", String(ports.fake), "-m", "0", "1 2 text x"], {
        cwd: dir,
        env: { PATH: process.env.PATH ?? "" },
        stdout: "ignore",
        stderr: Bun.file(smscOut),
      }),
    );
  }
  spawn(SMSBOX);
  await until("smsbox's sendsms port", () => opens(ports.sendsms), logs);
  const status = () => fetch(`http://${HOST}:${ports.admin}/status.txt?password=${ADMIN_PASSWORD}`).then((r) => r.text());
  const sendsmsUrl = `http://${HOST}:${ports.sendsms}/cgi-bin/sendsms?${new URLSearchParams(USER)}`;
  return {
    sendsmsUrl,
    async sendsms(params) {
      const res = await fetch(`${sendsmsUrl}&${new URLSearchParams(params)}`);
      return { status: res.status, body: await res.text() };
    },
    status,
    async online() {
      try {
        const s = await status();
        const smsc = o.fakeSmsc ? /fake\[[^\]]*\].*\(online/ : /pigeon\[[^\]]*\].*\(online/;
        return smsc.test(s) && /smsbox:.*\(on-line/.test(s);
      } catch {
        return false;
      }
    },
    logs,
    delivered: () => (existsSync(smscOut) ? (readFileSync(smscOut, "utf8").match(/Got message/g)?.length ?? 0) : 0),
    async stop() {
      // Asked to stop first, killed when it does not within a few seconds.
      for (const box of boxes) box.kill("SIGTERM");
      await Promise.race([Promise.all(boxes.map((b) => b.exited)), Bun.sleep(3000)]);
      for (const box of boxes) if (box.exitCode === null) box.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
