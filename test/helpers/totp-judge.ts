// An independent TOTP (RFC 6238: HMAC-SHA1, 30-second steps, 6 digits) in Python's standard library,
// for tests to sign in with: nothing of Pigeon's own code computes these codes.
import { expect } from "bun:test";

const SCRIPT = `
import base64, hashlib, hmac, struct, sys, time
secret = sys.argv[1].replace(" ", "").upper()
key = base64.b32decode(secret + "=" * (-len(secret) % 8))
at = int(sys.argv[2]) if len(sys.argv) > 2 else int(time.time())
mac = hmac.new(key, struct.pack(">Q", at // 30), hashlib.sha1).digest()
offset = mac[-1] & 15
print("%06d" % ((struct.unpack(">I", mac[offset:offset + 4])[0] & 0x7FFFFFFF) % 1000000))
`;

/** The code Python computes for `secret` (base32, spaces allowed) at `atMs`, or at its own clock's now. */
export function pythonTotp(secret: string, atMs?: number): string {
  const args = ["python3", "-c", SCRIPT, secret, ...(atMs === undefined ? [] : [String(Math.floor(atMs / 1000))])];
  const run = Bun.spawnSync(args, { stdout: "pipe", stderr: "pipe" });
  expect({ code: run.exitCode, stderr: run.stderr.toString() }).toEqual({ code: 0, stderr: "" });
  const code = run.stdout.toString().trim();
  expect(code).toMatch(/^\d{6}$/);
  return code;
}

/** The enrolment page's secret, as shown to the user (grouped in fours). */
export function secretOnPage(page: string): string {
  const found = /id="totp-secret">([A-Z2-7 ]+)</.exec(page);
  expect(found).not.toBeNull();
  return found![1];
}
