// Every answered request reaches the pipeline's `finished` hook once, with the route's pattern (never
// the raw path), the status the caller got and how long it took: the access log and the HTTP metrics
// are made from it. Refusals before routing (no key, wrong body, unknown path) count too.
import { beforeAll, describe, expect, test } from "bun:test";
import type { RequestDone } from "../../src/http/foundation";
import { createTestContext } from "../helpers/context";
import { RECIPIENT } from "../helpers/numbers";

describe("the request-finished hook", () => {
  const seen: RequestDone[] = [];
  let ctx: Awaited<ReturnType<typeof createTestContext>>;
  beforeAll(async () => {
    ctx = await createTestContext({ requestFinished: (done) => seen.push(done) });
  });

  async function only(run: () => Promise<{ status: number; headers: Headers }>): Promise<RequestDone> {
    seen.length = 0;
    const reply = await run();
    await Bun.sleep(5);
    expect(seen).toHaveLength(1);
    const [done] = seen;
    expect(done.status).toBe(reply.status);
    expect(done.requestId).toBe(reply.headers.get("x-request-id") ?? "-");
    expect(done.durationMs).toBeGreaterThanOrEqual(0);
    return done;
  }

  test("a send (a fast route) and its refusal carry the route and the status", async () => {
    const sent = await only(() => ctx.call("POST", "/v1/api/sms/send", { body: { recipient_contact: RECIPIENT, message: "hi" } }));
    expect(sent).toMatchObject({ method: "POST", route: "/v1/api/sms/send" });
    const refused = await only(() => ctx.call("POST", "/v1/api/sms/send", { body: { recipient_contact: "nope" } }));
    expect(refused).toMatchObject({ route: "/v1/api/sms/send", status: 400 });
  });

  test("a route with a parameter is named by its pattern, not by the id asked for", async () => {
    const missing = await only(() => ctx.call("GET", "/v1/api/notification/999999"));
    expect(missing).toMatchObject({ method: "GET", route: "/v1/api/notification/:notification_id", status: 404 });
  });

  test("a request refused before routing (no key) is still named by the route it asked for", async () => {
    const denied = await only(() => ctx.call("GET", "/v1/api/notification/5", { key: null }));
    expect(denied).toMatchObject({ route: "/v1/api/notification/:notification_id", status: 401 });
  });

  test("a path no route serves is 'unmatched', so raw paths never become labels", async () => {
    const lost = await only(() => ctx.call("GET", "/no/such/place/123"));
    expect(lost).toMatchObject({ route: "unmatched", status: 404 });
  });

  test("a handler's own status (health answers 200) is what is recorded", async () => {
    const health = await only(() => ctx.call("GET", "/health"));
    expect(health).toMatchObject({ route: "/health", status: 200 });
  });
});
