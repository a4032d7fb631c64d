// Every route says who may call it where it is declared: `{ auth: "apiKey" }` and the like. The
// declaration does two things: it puts the caller into the handler's context (`auth` for an API
// key, `device` for a phone) and it decides the operation's OpenAPI security, from one table here.
//
// Why the API-key check itself still runs in the foundation's onRequest, by path prefix: a macro's
// resolve runs after the body is parsed, and a caller without a key must be refused before that
// (and counted by the failed-sign-in throttle, and given rate-limit headers). So the prefix gate is
// the early check and this macro is the declaration plus the typed context; test/http/declared-auth.test.ts
// walks every route and fails when a declaration and the gate disagree, or a route declares nothing.
//
// A route a key can reach (apiKey, smsgate, twilio) also declares the key scope it needs beside its
// kind: `{ auth: "apiKey", scope: "send" }` (src/core/scopes.ts). The foundation checks it right
// after the key, before the body, from the table the app builds of these declarations
// (scopeTable below); test/keys/route-sweep.test.ts walks every such route with a key that lacks it.
import { Elysia } from "elysia";
import type { RouteScope } from "../core/scopes";
import { authOf } from "./foundation";

/**
 * Who calls a route:
 * - apiKey: a workspace's API key (checked in onRequest before the body; `auth` in the context).
 * - phone: a paired phone's device token (`device` in the context).
 * - phoneOptional: a phone that may send its device token (the handler tries it).
 * - phoneSignUp: a phone registering, with the pairing token, a one-time code or its login (checked by the handler).
 * - phoneLogin: the app's login and password (checked by the handler).
 * - phoneSigned: a phone posting events signed with its provisioned key (checked by the handler over
 *   the raw body); documented under the device's credentials, as the app knows them.
 * - platform: a provider or platform that signs the call; the handler checks the signature over the raw body.
 * - session: a dashboard user's session cookie, checked by the dashboard's page wrapper (which sends
 *   a browser without one to the sign-in page); dashboard pages are not in the API document.
 * - smsgate: SMSGate's third-party API: Basic with an API key and its secret, or a Bearer JWT from its
 *   POST /auth/token (checked in onRequest like apiKey; `auth` in the context, scopes per route).
 * - twilio: Twilio's Messages API: Basic with the workspace's account SID and auth token, or with an
 *   API key and its secret (checked in onRequest like apiKey; `auth` in the context).
 * - mcp: the MCP endpoint: an API key as Bearer with X-API-SECRET (or the x-api-key pair), or the key and
 *   secret as Basic (checked in onRequest like apiKey, with the WWW-Authenticate challenge MCP clients
 *   expect; `auth` in the context).
 * - public: anyone (health, docs, the dashboard's sign-in and setup pages and its assets).
 */
export type AuthKind =
  | "apiKey"
  | "phone"
  | "phoneOptional"
  | "phoneSignUp"
  | "phoneLogin"
  | "phoneSigned"
  | "platform"
  | "session"
  | "smsgate"
  | "twilio"
  | "mcp"
  | "public";

type SecurityRequirement = Record<string, string[]>;

/** An API key as a Bearer token or in x-api-key, always with its secret: the document's default. */
export const API_KEY_SECURITY: SecurityRequirement[] = [
  { ApiKeyBearer: [], ApiSecret: [] },
  { ApiKeyHeader: [], ApiSecret: [] },
];

/** The one place a declared kind becomes an OpenAPI security requirement. */
export const SECURITY_OF: Record<AuthKind, SecurityRequirement[]> = {
  apiKey: API_KEY_SECURITY,
  phone: [{ PhoneDeviceToken: [] }],
  phoneOptional: [{ PhoneDeviceToken: [] }, {}],
  phoneSignUp: [{ PhonePairingToken: [] }, { PhoneLogin: [] }],
  phoneLogin: [{ PhoneLogin: [] }],
  phoneSigned: [{ PhoneDeviceToken: [] }],
  platform: [],
  session: [],
  smsgate: [{ SmsGateBasic: [] }, { SmsGateBearer: [] }],
  twilio: [{ TwilioBasic: [] }],
  mcp: API_KEY_SECURITY,
  public: [],
};

/**
 * The `auth` macro. A plugin whose routes take phones passes how a device token is checked; the
 * others need nothing. What a handler may read follows its kind: `auth` on apiKey routes, `device`
 * on phone routes, nothing on the others. (Elysia types a macro's context alike for every value it
 * is given, so both names are typed on every route; declaring the kind is what puts one there.)
 */
export function declaredAuth<Device = never>(authenticateDevice?: (headers: Headers) => Promise<Device>) {
  const caller = (kind: AuthKind) => {
    if (kind === "apiKey" || kind === "smsgate" || kind === "twilio" || kind === "mcp")
      return ({ request }: { request: Request }) => ({ auth: authOf(request) });
    if (kind !== "phone") return () => ({});
    if (!authenticateDevice) throw new Error('A route declared auth "phone" in a plugin that has no device check');
    return async ({ request }: { request: Request }) => ({ device: await authenticateDevice(request.headers) });
  };
  return new Elysia({ name: "pigeon-declared-auth", seed: authenticateDevice ?? "api-key" }).macro({
    auth: (kind: AuthKind) => {
      const resolve = caller(kind);
      declaredKinds.set(resolve, kind);
      // A copy per route: the document builder may edit an operation's security in place.
      return { detail: { security: structuredClone(SECURITY_OF[kind]) }, resolve };
    },
    // The check itself runs in the foundation's admission; this step only carries the declaration.
    scope: (scope: RouteScope) => {
      const resolve = () => ({});
      declaredScopes.set(resolve, scope);
      return { resolve };
    },
  });
}

/** Each scope declaration's step, so a route's declared scope can be read back from its hooks. */
const declaredScopes = new WeakMap<object, RouteScope>();

/** The scopes a route declared (undefined when it declared none; null for "any valid key"). */
export function declaredScopesOf(route: { hooks: { beforeHandle?: unknown } }): RouteScope[] {
  const steps = [route.hooks.beforeHandle ?? []].flat() as ({ fn?: unknown } | ((...args: never[]) => unknown))[];
  return steps.flatMap((step) => {
    const fn = typeof step === "function" ? step : step.fn;
    return (typeof fn === "object" || typeof fn === "function") && declaredScopes.has(fn as object)
      ? [declaredScopes.get(fn as object) as RouteScope]
      : [];
  });
}

/** The kinds whose callers come with a key, so whose routes declare a scope. */
export const KEYED_KINDS: readonly AuthKind[] = ["apiKey", "smsgate", "twilio"];

/**
 * The scope each keyed route needs, by `METHOD pattern`, read from the routes' declarations. A
 * keyed route that declares none needs `admin`: what nobody thought about only the admin may do.
 */
export function scopeTable(routes: { method: string; path: string; hooks: { beforeHandle?: unknown } }[]): Map<string, RouteScope> {
  const table = new Map<string, RouteScope>();
  for (const route of routes) {
    const kind = declaredKindsOf(route)[0];
    if (!kind || !KEYED_KINDS.includes(kind)) continue;
    const [scope] = declaredScopesOf(route);
    table.set(`${route.method.toUpperCase()} ${route.path}`, scope === undefined ? "admin" : scope);
  }
  return table;
}

/** Each declaration's resolve step, so a route's declared kind can be read back from its hooks. */
const declaredKinds = new WeakMap<object, AuthKind>();

/** The kinds a route declared (a test holds that every route declares exactly one). */
export function declaredKindsOf(route: { hooks: { beforeHandle?: unknown } }): AuthKind[] {
  const steps = [route.hooks.beforeHandle ?? []].flat() as ({ fn?: unknown } | ((...args: never[]) => unknown))[];
  return steps.flatMap((step) => {
    const fn = typeof step === "function" ? step : step.fn;
    const kind = typeof fn === "object" || typeof fn === "function" ? declaredKinds.get(fn as object) : undefined;
    return kind ? [kind] : [];
  });
}
