// What a user needs to pair a stock phone: the server URL and the workspace's pairing token (the
// app's "private token"), as text and as a QR code.
import { Elysia, t } from "elysia";
import { declaredAuth } from "../../http/declared-auth";
import { Envelope, errorResponses, models, ok } from "../../http/envelope";
import type { ChannelRouteContext } from "../types";
import { pairingInfo } from "./pairing";
import { publicBase } from "./routes";

const PairingResponse = Envelope(
  t.Object({
    server_url: t.String({ description: "Enter as the app's API URL (Settings → Cloud Server)" }),
    pairing_token: t.String({ description: "Enter as the app's Private Token" }),
    qr_svg: t.String({ description: "An SVG QR code of {url, token}" }),
    qr_text: t.String({ description: "What the QR code holds" }),
    app_settings: t.Record(t.String(), t.String()),
  }),
);

export function pairingRoutes(s: ChannelRouteContext) {
  const token = async (workspaceId: number) => (await s.accounts.getWorkspace(workspaceId)).pairingToken;
  return new Elysia({ prefix: "/v1/api/device/pairing", tags: ["Devices"] })
    .use(declaredAuth())
    .use(models)
    .get(
      "",
      async ({ auth, request, server }) =>
        ok(await pairingInfo(`${publicBase(s, request, server)}/mobile/v1`, await token(auth.workspaceId)), "Pairing info"),
      {
        response: { 200: PairingResponse, ...errorResponses() },
        auth: "apiKey",
        scope: "devices",
        detail: {
          operationId: "getPairing",
          summary: "How to pair a phone",
          description:
            'The URL and pairing token to enter in the SMS Gateway for Android app (Settings → Cloud Server; pick "SSE Only"), and a QR code of both. ' +
            "The URL comes from PIGEON_PUBLIC_URL, else the address this request used (as X-Forwarded-Proto/-Host say when the caller is a proxy in PIGEON_TRUSTED_PROXIES); release builds of the app need HTTPS.",
        },
      },
    )
    .post(
      "/rotate",
      async ({ auth, request, server }) => {
        const ws = await s.accounts.rotatePairingToken(auth.workspaceId);
        return ok(await pairingInfo(`${publicBase(s, request, server)}/mobile/v1`, ws.pairingToken), "Pairing token rotated");
      },
      {
        response: { 200: PairingResponse, ...errorResponses() },
        auth: "apiKey",
        scope: "devices",
        detail: {
          operationId: "rotatePairingToken",
          summary: "Rotate the pairing token",
          description: "Issues a new pairing token; the old one stops pairing new phones at once. Phones already paired keep working.",
        },
      },
    );
}
