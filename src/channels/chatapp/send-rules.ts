// The chat-app rules a send passes before anything is stored: the template's business account is
// linked (and the number matches it), the number is not blocked, a freeform message needs the
// 24-hour window open; and the probe of a template's header media.
import type { AuthContext } from "../../core/caller";
import { AppError } from "../../core/errors";
import { webhookTargetProblem } from "../../lib/net-safety";
import { DAY, iso } from "../../lib/time";
import type { Prepared, SendInput } from "../../modules/sending/types";
import type { DeviceRow } from "../../modules/devices/model";
import type { TemplateRow } from "../../modules/templates/model";
import { chatappConfigOf, type HeaderMedia } from "./adapter";
import type { Blocking } from "./blocking";
import type { ChatappContext } from "./context";
import type { TemplateSync } from "./templates";

/** The window closes 24 hours after the user last wrote; we stop a minute early to be safe. */
export const WINDOW_MS = DAY - 60_000;
export const MEDIA_LIMITS: Record<HeaderMedia["type"], number> = {
  image: 5 * 1024 * 1024,
  video: 16 * 1024 * 1024,
  document: 100 * 1024 * 1024,
};

function presentTemplateRef(t: TemplateRow) {
  return { template_id: t.id, code: t.code, name: t.name, language: t.language };
}

export function createSendRules(ctx: ChatappContext, blocking: Blocking, sync: TemplateSync) {
  const { clock, threads } = ctx;
  const doFetch = ctx.fetch ?? fetch;

  /** Whether the user last wrote to this business number less than 24 hours ago. */
  async function windowOpen(
    workspaceId: number,
    deviceId: number,
    recipient: string,
  ): Promise<{ open: boolean; lastInboundAt: number | null }> {
    const thread = await threads.find(workspaceId, "chatapp", deviceId, recipient);
    const last = thread?.lastInboundAt ?? null;
    return { open: last !== null && clock.now() < last + WINDOW_MS, lastInboundAt: last };
  }

  /**
   * The chat-app rules every send passes, before anything is stored. A template goes out through a
   * number of its own business account, so the device may change: the one to use is returned.
   */
  async function check(auth: AuthContext, p: Prepared, input: SendInput): Promise<{ device: DeviceRow } | undefined> {
    const chosenExplicitly = input.deviceId !== undefined && input.deviceId !== null && String(input.deviceId).trim() !== "";
    let device = p.device;
    if (p.template) {
      const account = p.template.businessAccountId;
      const linked = (await ctx.liveDevices(auth.workspaceId)).filter((d) => chatappConfigOf(d.config)?.businessAccountId === account);
      if (!account || linked.length === 0) {
        throw new AppError(
          "template_account_unlinked",
          `Template ${p.template.id} is approved on a business account that is no longer linked; re-link it or use another template`,
          {
            template_id: p.template.id,
            business_account_id: account,
          },
        );
      }
      if (chosenExplicitly && chatappConfigOf(device.config)?.businessAccountId !== account) {
        throw new AppError(
          "device_account_mismatch",
          `Device ${device.id} belongs to another business account than template ${p.template.id}; omit device_id or choose a matching template`,
          {
            device_id: device.id,
            template_id: p.template.id,
          },
        );
      }
      if (!chosenExplicitly && chatappConfigOf(device.config)?.businessAccountId !== account) {
        device = linked.find((d) => d.status === "active" && (d.blockedCode === null || blocking.onProbation(d))) ?? linked[0];
      }
    }
    if (device.blockedCode !== null && !blocking.onProbation(device)) throw blocking.blockedError(device);
    if (!p.template) {
      const { open, lastInboundAt } = await windowOpen(auth.workspaceId, device.id, p.recipient);
      if (!open) {
        const available = (await sync.activeTemplatesOf(auth.workspaceId, ctx.configOf(device).businessAccountId)).map(presentTemplateRef);
        throw new AppError(
          "window_closed",
          "The 24-hour window with this user is closed: freeform messages are refused until they write again. Send an approved template instead (template_id).",
          {
            can_send_freeform: false,
            can_send_template: available.length > 0,
            available_templates: available,
            last_inbound_at: iso(lastInboundAt),
          },
          131047,
        );
      }
    }
    return device === p.device ? undefined : { device };
  }

  /**
   * Header media for a template: a link that is not http(s) or cannot be fetched is dropped (the
   * platform would refuse the message for it anyway), one over the platform's limit is refused.
   */
  async function checkHeaderMedia(media: HeaderMedia | undefined): Promise<{ media: HeaderMedia | null; note: string | null }> {
    if (!media) return { media: null, note: null };
    let url: URL;
    try {
      url = new URL(media.link);
      if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error("not http(s)");
    } catch {
      return { media: null, note: `header ${media.type} link "${media.link}" is not an http(s) URL and was dropped` };
    }
    if (await webhookTargetProblem(media.link, ctx.config.allowPrivateWebhooks)) {
      return { media: null, note: `header ${media.type} link points at a private address and was dropped` };
    }
    let size: number | null = null;
    try {
      const res = await doFetch(media.link, { method: "HEAD", signal: AbortSignal.timeout(5000), redirect: "follow" });
      if (!res.ok) return { media: null, note: `header ${media.type} link answered HTTP ${res.status} and was dropped` };
      const length = res.headers.get("content-length");
      size = length ? Number(length) : null;
    } catch {
      return { media: null, note: `header ${media.type} link cannot be fetched and was dropped` };
    }
    const limit = MEDIA_LIMITS[media.type];
    if (size !== null && size > limit) {
      throw new AppError(
        "media_too_large",
        `The header ${media.type} is ${size} bytes; the platform's limit for ${media.type}s is ${limit} bytes`,
        {
          type: media.type,
          size,
          limit,
        },
      );
    }
    return { media, note: null };
  }

  return { check, checkHeaderMedia, windowOpen };
}
