// The dashboard in process, as a browser without scripts asks it: pages by GET with the session
// cookie, forms posted url-encoded (redirects not followed), and signing in through the form.
import { expect } from "bun:test";
import type { TestContext } from "./context";

export const DASHBOARD_PASSWORD = "a long enough secret";

const cookieValue = (res: Response, name: string) => new RegExp(`${name}=([^;]*)`).exec(res.headers.getSetCookie().join("\n"))?.[1] ?? null;

/** Requests against `ctx()`'s app, as the session `cookie()` unless told otherwise; signing in lands on `landing`. */
export function dashboardRequests(ctx: () => TestContext, cookie: () => string, landing: string) {
  const get = (path: string, as = cookie()) =>
    ctx().app.handle(new Request(`http://localhost${path}`, { headers: as ? { cookie: as } : {}, redirect: "manual" }));
  const post = (path: string, fields: Record<string, string>, as = cookie(), headers: Record<string, string> = {}) =>
    ctx().app.handle(
      new Request(`http://localhost${path}`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", cookie: as, ...headers },
        body: new URLSearchParams(fields).toString(),
      }),
    );
  /** A page that must answer 200, as text. */
  const text = async (path: string, as = cookie()) => {
    const res = await get(path, as);
    expect({ path, status: res.status }).toEqual({ path, status: 200 });
    return res.text();
  };
  /** Signs in through the form; the session cookie and the CSRF token of the `landing` page. */
  async function signIn(email: string): Promise<{ cookie: string; csrf: string }> {
    const form = await get("/dashboard/sign-in", "");
    const pre = cookieValue(form, "pigeon_presession")!;
    const res = await post("/dashboard/sign-in", { _csrf: pre, email, password: DASHBOARD_PASSWORD }, `pigeon_presession=${pre}`);
    const session = `pigeon_session=${cookieValue(res, "pigeon_session")}`;
    const page = await (await get(landing, session)).text();
    return { cookie: session, csrf: /name="_csrf" value="([0-9a-f]{32})"/.exec(page)![1] };
  }
  return { get, post, text, signIn };
}
