// What the bench's runners share to speak to a running server: an API key's headers, a JSON call
// in the envelope, and a free loopback port.
import { createServer } from "node:net";

export type Key = { api_key: string; api_secret: string };

export const auth = (key: Key) => ({ authorization: `Bearer ${key.api_key}`, "x-api-secret": key.api_secret });

/** GET `path`, or POST `body` as JSON to it, with `key`; the envelope's data, or a throw naming the answer. */
export async function api(base: string, key: Key, path: string, body?: unknown) {
  const res = await fetch(base + path, {
    method: body === undefined ? "GET" : "POST",
    headers: { ...auth(key), ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  // biome-ignore lint/suspicious/noExplicitAny: each caller reads the fields of the answer it asked for
  const json = (await res.json()) as { data: any };
  if (!res.ok) throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`);
  return json.data;
}

/** A loopback port free now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}
