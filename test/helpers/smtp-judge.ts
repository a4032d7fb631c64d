// Outside judges of the SMTP listener: Python's smtplib and Debian's swaks as the sending mail
// servers. smtplibSession runs one SMTP conversation in a Python process and reports each step's
// reply code and text, so a test asserts what a real client saw. selfSignedCert makes a throwaway
// certificate with openssl for STARTTLS and implicit TLS.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export function selfSignedCert(): { cert: string; key: string; certPath: string; keyPath: string } {
  const dir = mkdtempSync(join(tmpdir(), "pigeon-smtp-cert-"));
  const certPath = join(dir, "cert.pem");
  const keyPath = join(dir, "key.pem");
  const made = Bun.spawnSync([
    "openssl",
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-keyout",
    keyPath,
    "-out",
    certPath,
    "-days",
    "2",
    "-subj",
    "/CN=localhost",
  ]);
  if (made.exitCode !== 0) throw new Error(`openssl failed: ${made.stderr.toString()}`);
  return { cert: readFileSync(certPath, "utf8"), key: readFileSync(keyPath, "utf8"), certPath, keyPath };
}

export interface SmtplibPlan {
  port: number;
  /** "starttls": plain then STARTTLS; "implicit": TLS from the first byte; "none": plaintext throughout. */
  tls: "starttls" | "implicit" | "none";
  user?: string;
  password?: string;
  /** AUTH mechanism smtplib should use (default: its choice, PLAIN). */
  mechanism?: "PLAIN" | "LOGIN";
  from: string;
  to: string[];
  /** The raw message (headers and body); not sent when no recipient was accepted. */
  message?: string;
}

export interface Step {
  step: string;
  code: number;
  text: string;
}

const SCRIPT = String.raw`
import json, smtplib, ssl, sys
plan = json.loads(sys.stdin.read())
steps = []
def note(step, code, text):
    steps.append({"step": step, "code": int(code), "text": text.decode() if isinstance(text, bytes) else str(text)})
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
try:
    if plan["tls"] == "implicit":
        s = smtplib.SMTP_SSL("127.0.0.1", plan["port"], timeout=20, context=ctx)
    else:
        s = smtplib.SMTP("127.0.0.1", plan["port"], timeout=20)
    code, text = s.ehlo(); note("ehlo", code, text)
    if plan["tls"] == "starttls":
        code, text = s.starttls(context=ctx); note("starttls", code, text)
        code, text = s.ehlo(); note("ehlo2", code, text)
    if plan.get("user") is not None:
        try:
            if plan.get("mechanism") == "LOGIN":
                s.user, s.password = plan["user"], plan["password"]
                code, text = s.auth("LOGIN", s.auth_login, initial_response_ok=False)
            else:
                code, text = s.login(plan["user"], plan["password"])
            note("auth", code, text)
        except smtplib.SMTPAuthenticationError as e:
            note("auth", e.smtp_code, e.smtp_error)
        except smtplib.SMTPNotSupportedError as e:
            note("auth", 502, str(e))
    code, text = s.mail(plan["from"]); note("mail", code, text)
    accepted = 0
    if code == 250:
        for to in plan["to"]:
            code, text = s.rcpt(to); note("rcpt", code, text)
            if code == 250: accepted += 1
    if accepted and plan.get("message") is not None:
        code, text = s.data(plan["message"].encode("utf-8")); note("data", code, text)
    try:
        s.quit()
    except Exception:
        pass
except smtplib.SMTPServerDisconnected as e:
    note("disconnected", 0, str(e))
except smtplib.SMTPResponseException as e:
    note("error", e.smtp_code, e.smtp_error)
print(json.dumps(steps))
`;

/** One SMTP conversation by Python's smtplib (see SmtplibPlan); each step's reply as the client saw it. */
export async function smtplibSession(plan: SmtplibPlan): Promise<Step[]> {
  const child = Bun.spawn(["python3", "-c", SCRIPT], { stdin: new Blob([JSON.stringify(plan)]), stdout: "pipe", stderr: "pipe" });
  const [out, err] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()]);
  await child.exited;
  if (child.exitCode !== 0) throw new Error(`smtplib failed: ${err}`);
  return JSON.parse(out) as Step[];
}

/** The first step of a kind (the nth with `nth`). */
export function stepOf(steps: Step[], step: string, nth = 0): Step | undefined {
  return steps.filter((s) => s.step === step)[nth];
}

/** A plain-text mail with the usual headers. */
export function mailText(o: { from: string; to: string; subject: string; body: string; messageId?: string; html?: string }): string {
  const id = o.messageId ?? `<${crypto.randomUUID()}@judge.example>`;
  const head = [`From: ${o.from}`, `To: ${o.to}`, `Subject: ${o.subject}`, `Message-ID: ${id}`, "MIME-Version: 1.0"];
  if (o.html !== undefined) return [...head, "Content-Type: text/html; charset=utf-8", "", o.html, ""].join("\r\n");
  return [...head, "Content-Type: text/plain; charset=utf-8", "", o.body, ""].join("\r\n");
}

/** Runs swaks (Debian's SMTP test tool) with `args`; its transcript and exit code. */
export async function swaks(args: string[]): Promise<{ code: number; transcript: string }> {
  const child = Bun.spawn(["swaks", ...args], { stdout: "pipe", stderr: "pipe" });
  const [out, err] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text()]);
  await child.exited;
  return { code: child.exitCode ?? -1, transcript: out + err };
}

/** Calls `each` with every line of `stream` parsed as JSON, as the lines come. */
async function eachJsonLine(stream: ReadableStream<Uint8Array>, each: (line: Record<string, unknown>) => void): Promise<void> {
  const decoder = new TextDecoder();
  let buffered = "";
  const reader = stream.getReader();
  for (let r = await reader.read(); !r.done; r = await reader.read()) {
    buffered += decoder.decode(r.value, { stream: true });
    for (let nl = buffered.indexOf("\n"); nl !== -1; nl = buffered.indexOf("\n")) {
      each(JSON.parse(buffered.slice(0, nl)));
      buffered = buffered.slice(nl + 1);
    }
  }
}

const BATCH_SCRIPT = String.raw`
import json, smtplib, sys
plan = json.loads(sys.stdin.read())
s = None
for i, mail in enumerate(plan["mails"]):
    try:
        if s is None:
            s = smtplib.SMTP("127.0.0.1", plan["port"], timeout=20)
            s.ehlo()
            s.login(plan["user"], plan["password"])
        s.sendmail(plan["from"], [mail["to"]], mail["message"].encode("utf-8"))
        print(json.dumps({"i": i, "code": 250}), flush=True)
    except smtplib.SMTPResponseException as e:
        print(json.dumps({"i": i, "code": e.smtp_code}), flush=True)
    except Exception as e:
        print(json.dumps({"i": i, "code": 0, "error": str(e)}), flush=True)
        break
`;

/**
 * Mails sent one after another by smtplib over one signed-in session (plaintext, so the server must
 * allow loopback sign-in), each one's outcome reported as it is known: 250, the refusal's code, or 0
 * when the connection went and the batch stopped.
 */
export function smtplibBatch(plan: {
  port: number;
  user: string;
  password: string;
  from: string;
  mails: { to: string; message: string }[];
}) {
  const child = Bun.spawn(["python3", "-c", BATCH_SCRIPT], { stdin: new Blob([JSON.stringify(plan)]), stdout: "pipe", stderr: "pipe" });
  const outcomes: { i: number; code: number }[] = [];
  const done = (async () => {
    await eachJsonLine(child.stdout, (line) => outcomes.push(line as { i: number; code: number }));
    await child.exited;
    return outcomes;
  })();
  return { outcomes, done };
}

const RELAY_SCRIPT = String.raw`
import json, socket, sys
from aiosmtpd.controller import Controller
refuse = {"left": int(sys.argv[1])}
class Handler:
    async def handle_DATA(self, server, session, envelope):
        if refuse["left"] > 0:
            refuse["left"] -= 1
            return "451 4.3.0 Try again later"
        print(json.dumps({"from": envelope.mail_from, "to": envelope.rcpt_tos, "data": envelope.content.decode("utf-8", "replace")}), flush=True)
        return "250 OK"
# The controller checks its server by connecting to the port it was given, so it needs a real one.
probe = socket.socket(); probe.bind(("127.0.0.1", 0)); port = probe.getsockname()[1]; probe.close()
controller = Controller(Handler(), hostname="127.0.0.1", port=port)
controller.start()
print(json.dumps({"port": port}), flush=True)
try:
    sys.stdin.read()
finally:
    controller.stop()
`;

/** Debian's python3 (the one python3-aiosmtpd is installed for), else whatever python3 is on the PATH. */
const debianPython = () => (Bun.spawnSync(["test", "-x", "/usr/bin/python3"]).exitCode === 0 ? "/usr/bin/python3" : "python3");

export interface RelayMail {
  from: string;
  to: string[];
  data: string;
}

/**
 * Python's aiosmtpd as the relay Pigeon forwards through, on a loopback port: every mail it takes
 * is kept (envelope and raw message). It answers the first `refuseFirst` mails 451, as a busy relay.
 */
export async function startAiosmtpdRelay(refuseFirst = 0) {
  const child = Bun.spawn([debianPython(), "-c", RELAY_SCRIPT, String(refuseFirst)], { stdin: "pipe", stdout: "pipe", stderr: "pipe" });
  const mails: RelayMail[] = [];
  let port = 0;
  const ready = Promise.withResolvers<void>();
  void (async () => {
    await eachJsonLine(child.stdout, (line) => {
      if ("port" in line) {
        port = line.port as number;
        ready.resolve();
      } else mails.push(line as unknown as RelayMail);
    });
    ready.reject(new Error(`aiosmtpd exited: ${await new Response(child.stderr).text()}`));
  })();
  await ready.promise;
  return {
    port,
    mails,
    stop() {
      child.kill();
    },
  };
}

/** A header of a raw message (unfolded), or null. */
export function headerOf(raw: string, name: string): string | null {
  const head = raw.split(/\r?\n\r?\n/)[0].replace(/\r?\n[ \t]+/g, " ");
  const line = head.split(/\r?\n/).find((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`));
  return line ? line.slice(name.length + 1).trim() : null;
}
