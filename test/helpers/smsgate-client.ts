// The HttpClient the `android-sms-gateway` npm client takes, two ways: over fetch as its README
// writes one (the binary tests), and over the in-process app (app.handle). Both fail loudly on an
// error status; the in-process one carries the status and the parsed body, for the tests of a
// refusal (`clientRefusal`).
import type { TestContext } from "./context";

type Headers = Record<string, string>;
// biome-ignore lint/suspicious/noExplicitAny: the client's HttpClient answers any JSON it is asked for
type Json = any;
type Request = (method: string, url: string, headers: Headers, body?: unknown) => Promise<Json>;

function verbs(request: Request) {
  return {
    get: (url: string, headers: Headers) => request("GET", url, headers),
    post: (url: string, body: unknown, headers: Headers) => request("POST", url, headers, body),
    put: (url: string, body: unknown, headers: Headers) => request("PUT", url, headers, body),
    patch: (url: string, body: unknown, headers: Headers) => request("PATCH", url, headers, body),
    delete: (url: string, headers: Headers) => request("DELETE", url, headers),
  };
}

async function answer(method: string, url: string, res: Response): Promise<Json> {
  const text = await res.text();
  if (!res.ok) {
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {}
    throw Object.assign(new Error(`${method} ${url} → ${res.status} ${text}`), { status: res.status, body });
  }
  return text ? JSON.parse(text) : undefined;
}

const init = (method: string, headers: Headers, body?: unknown) => ({
  method,
  headers,
  body: body === undefined ? undefined : JSON.stringify(body),
});

/** Over the network, as the client's README writes it with fetch. */
export const fetchHttpClient = verbs(async (method, url, headers, body) =>
  answer(method, url, await fetch(url, init(method, headers, body))),
);

/** Over the in-process app. */
export const inProcessHttpClient = (ctx: TestContext) =>
  verbs(async (method, url, headers, body) => answer(method, url, await ctx.app.handle(new Request(url, init(method, headers, body)))));

/** The refusal a client call ended in: its status and the body Pigeon answered with. */
export async function clientRefusal(p: Promise<unknown>) {
  const error = (await p.then(
    () => null,
    (e: unknown) => e,
  )) as { status: number; body: { code: number; message: string; data: Record<string, unknown> } } | null;
  if (!error) throw new Error("expected a refusal");
  return error;
}
