// `pigeon keys create --scopes …` and `keys update` on the compiled binary: a key made to read
// messages is refused a send by the running server (403 key_scope_denied), keys list shows its
// limits, and a change made through the CLI while the server runs holds from the next request.
import { describe, expect, test } from "bun:test";
import { isolatedBinary, runCommand, startServer, tempDir } from "../helpers/binary";
import { RECIPIENT } from "../helpers/numbers";

const bin = isolatedBinary();

describe("pigeon keys with limits", () => {
  test("a messages:read key cannot send; list shows its limits; bad flags are refused", async () => {
    const env = { PIGEON_DATA_DIR: tempDir() };
    const made = await runCommand(
      bin,
      [
        "keys",
        "create",
        "--name",
        "reader",
        "--scopes",
        "messages:read",
        "--recipients",
        "contacts",
        "--daily-cap",
        "5",
        "--expires",
        "30d",
        "--json",
      ],
      env,
    );
    expect(made.code).toBe(0);
    const key = JSON.parse(made.stdout) as { api_key: string; api_secret: string; key_id: number };
    expect(JSON.parse(made.stdout)).toMatchObject({ scopes: ["messages:read"], recipients: "contacts", daily_cap: 5 });

    const bad = await runCommand(bin, ["keys", "create", "--name", "x", "--scopes", "write"], env);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr + bad.stdout).toContain("Unknown scope write");

    const list = await runCommand(bin, ["keys", "list", "--json"], env);
    const row = (JSON.parse(list.stdout) as { key: string; scopes: string; recipients: string; daily_cap: number }[]).find(
      (k) => k.key === key.api_key,
    );
    expect(row).toMatchObject({ scopes: "messages:read", recipients: "contacts", daily_cap: 5 });

    const server = await startServer(bin, env);
    try {
      const headers = { authorization: `Bearer ${key.api_key}`, "x-api-secret": key.api_secret, "content-type": "application/json" };
      const sent = await fetch(`${server.url}/v1/api/sms/send`, {
        method: "POST",
        headers,
        body: JSON.stringify({ recipient_contact: RECIPIENT, message: "not allowed" }),
      });
      expect(sent.status).toBe(403);
      const body = (await sent.json()) as { data: { error_code: string; scope: string } };
      expect(body.data).toMatchObject({ error_code: "key_scope_denied", scope: "send" });
      const read = await fetch(`${server.url}/v1/api/notification/list`, { headers });
      expect(read.status).toBe(200);

      // Changed by the CLI while the server runs: the next request sees it.
      const updated = await runCommand(bin, ["keys", "update", String(key.key_id), "--scopes", "all", "--json"], env);
      expect(updated.code).toBe(0);
      expect(JSON.parse(updated.stdout)).toMatchObject({ scopes: null });
      const again = await fetch(`${server.url}/v1/api/sms/send`, {
        method: "POST",
        headers,
        body: JSON.stringify({ recipient_contact: RECIPIENT, message: "still to a stranger" }),
      });
      expect(((await again.json()) as { data: { error_code: string } }).data.error_code).toBe("recipient_not_allowed");
    } finally {
      await server.stop("SIGKILL");
    }
  }, 60_000);
});
