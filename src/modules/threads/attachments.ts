// The parts of a received MMS whose bytes Pigeon keeps: each part checked on its own (its base64,
// its declared size), then kept while the message's and the workspace's caps allow; what is not
// kept is named with its reason, and the text of the message stays whatever happens to its parts.
// Served back, a part is shown inline only when its type is on a short list of images, audio,
// video and plain text; anything else (SVG, HTML, XML, scripts, unknown types) is a download of
// application/octet-stream, so nothing a sender made can run in a browser at Pigeon's origin.
import type { Clock } from "../../clock";
import type { Storage } from "../../db/storage";
import { createAttachmentRepository, type AttachmentMeta, type AttachmentRecord } from "./attachment-repository";
import type { DroppedPart } from "./schema";

/** Why a part's bytes were not kept. */
export const DROP_REASONS = {
  /** The phone sent no bytes (it could not read the part). */
  no_data: "the phone sent no bytes for this part",
  /** Its data is not standard base64 with padding, as the app writes it. */
  invalid_base64: "its data is not valid base64",
  /** The bytes decoded are not as many as its `size` says. */
  size_mismatch: "its decoded bytes do not match its size",
  /** Keeping it would pass PIGEON_MMS_MAX_MESSAGE_BYTES for this message. */
  message_cap: "it would pass the per-message cap (PIGEON_MMS_MAX_MESSAGE_BYTES)",
  /** Keeping it would pass PIGEON_MMS_MAX_WORKSPACE_BYTES for the workspace. */
  workspace_cap: "it would pass the workspace's cap (PIGEON_MMS_MAX_WORKSPACE_BYTES)",
  /** Kept, then removed by retention (PIGEON_RETENTION_DAYS, pigeon prune) with the message left. */
  retention: "it was kept, and removed by retention (PIGEON_RETENTION_DAYS or pigeon prune)",
} as const;
export type DropReason = keyof typeof DROP_REASONS;

/** One part as a phone reported it. */
export interface IncomingPart {
  partId: number | null;
  contentType: string;
  name: string | null;
  /** Bytes, as the phone counted them; null when it could not tell. */
  size: number | null;
  /** The bytes in base64; null when the phone sent none. */
  data: string | null;
}

export interface AttachmentCaps {
  perMessageBytes: number;
  perWorkspaceBytes: number;
}

/** The characters of standard base64, by char code. */
const BASE64_CHARS = new Uint8Array(128);
for (const c of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") BASE64_CHARS[c.charCodeAt(0)] = 1;

/**
 * Standard base64 with its padding, unwrapped: what Android's Base64.NO_WRAP writes. Checked a
 * character at a time (a regular expression over megabytes runs out of the engine's budget).
 */
export function isBase64(text: string): boolean {
  if (text.length % 4 !== 0) return false;
  const pad = text.endsWith("==") ? 2 : text.endsWith("=") ? 1 : 0;
  for (let i = 0; i < text.length - pad; i++) {
    const c = text.charCodeAt(i);
    if (c >= 128 || BASE64_CHARS[c] === 0) return false;
  }
  return true;
}

/** What a name or a content type may be at most when kept. */
const NAME_MAX = 200;

/** The types served as themselves and shown inline; every other type is a download of bytes. */
const INLINE_TYPES = new Set([
  "image/png",
  "image/jpeg",
  "image/gif",
  "image/webp",
  "image/bmp",
  "audio/amr",
  "audio/mpeg",
  "audio/mp4",
  "audio/aac",
  "audio/ogg",
  "audio/3gpp",
  "audio/wav",
  "video/mp4",
  "video/3gpp",
  "video/3gpp2",
  "video/webm",
  "text/plain",
]);
/** Names phones use for a type on the list. */
const ALIASES: Record<string, string> = { "image/jpg": "image/jpeg", "image/pjpeg": "image/jpeg", "audio/x-wav": "audio/wav" };

/** How a part is served: its Content-Type, whether it is shown inline, whether it is a picture. */
export function servedAs(contentType: string): { type: string; inline: boolean; image: boolean } {
  const [head, ...params] = contentType.split(";");
  const bare = head.trim().toLowerCase();
  const mime = ALIASES[bare] ?? bare;
  if (!INLINE_TYPES.has(mime)) return { type: "application/octet-stream", inline: false, image: false };
  if (mime === "text/plain") {
    const charset = params.map((p) => p.trim().match(/^charset\s*=\s*"?([A-Za-z0-9._-]{1,40})"?$/i)?.[1]).find((c) => c !== undefined);
    return { type: `text/plain; charset=${charset ?? "utf-8"}`, inline: true, image: false };
  }
  return { type: mime, inline: true, image: mime.startsWith("image/") };
}

/** The Content-Disposition of a part: inline or a download, its name in ASCII and in UTF-8 (RFC 6266). */
export function dispositionOf(a: Pick<AttachmentMeta, "id" | "name">, inline: boolean): string {
  const name = (a.name ?? "").trim() || `attachment-${a.id}`;
  const ascii = name.replace(/[^A-Za-z0-9._ -]/g, "_");
  return `${inline ? "inline" : "attachment"}; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}

/** The headers every served part carries, whatever its type: never sniffed, never given script or a page's powers. */
export function attachmentHeaders(a: Pick<AttachmentMeta, "id" | "name" | "contentType">): Record<string, string> {
  const served = servedAs(a.contentType);
  return {
    "content-type": served.type,
    "content-disposition": dispositionOf(a, served.inline),
    "x-content-type-options": "nosniff",
    "content-security-policy": "default-src 'none'; sandbox",
    "cross-origin-resource-policy": "same-origin",
    "cache-control": "private, no-store",
  };
}

/** What one MMS's parts came to once checked: the bytes to keep, and the parts dropped with their reason. */
export interface CheckedParts {
  workspaceId: number;
  keep: { part: IncomingPart & { contentType: string }; bytes: Buffer }[];
  dropped: DroppedPart[];
  /** Bytes received (decoded), whether kept or not: the metrics count them. */
  receivedBytes: number;
}

/** An attachment kept, as the thread message lists it. */
export type KeptAttachment = AttachmentMeta & { served: ReturnType<typeof servedAs> };

export interface AttachmentDeps {
  storage: Storage;
  clock: Clock;
  caps: AttachmentCaps;
  /** Once the unit that kept them has committed: the bytes received and kept (the metrics). */
  onReceived?: (receivedBytes: number, keptBytes: number) => void;
}

export function createAttachments(deps: AttachmentDeps) {
  const repo = createAttachmentRepository(deps.storage);
  const { caps } = deps;

  /** A part's bytes, or why it has none worth keeping. */
  function decode(part: IncomingPart): { bytes: Buffer } | { reason: DropReason } {
    if (part.data === null || part.data === "") return { reason: "no_data" };
    if (!isBase64(part.data)) return { reason: "invalid_base64" };
    const bytes = Buffer.from(part.data, "base64");
    if (part.size !== null && part.size !== bytes.length) return { reason: "size_mismatch" };
    return { bytes };
  }

  return {
    /**
     * Checks a received MMS's parts before its message is stored: each part alone (its base64, its
     * declared size), then in order against the per-message and the workspace's caps. Nothing here
     * refuses the message: a part that will not be kept is named in `dropped`, with its reason.
     */
    async check(workspaceId: number, parts: IncomingPart[]): Promise<CheckedParts> {
      const out: CheckedParts = { workspaceId, keep: [], dropped: [], receivedBytes: 0 };
      let stored: number | null = null;
      let keeping = 0;
      for (const raw of parts) {
        const part = {
          ...raw,
          contentType: raw.contentType.slice(0, NAME_MAX),
          name: raw.name === null ? null : raw.name.slice(0, NAME_MAX),
        };
        const drop = (reason: DropReason, size = part.size) =>
          out.dropped.push({ partId: part.partId, contentType: part.contentType, name: part.name, size, reason });
        const decoded = decode(part);
        if ("reason" in decoded) {
          drop(decoded.reason);
          continue;
        }
        const size = decoded.bytes.length;
        out.receivedBytes += size;
        if (keeping + size > caps.perMessageBytes) {
          drop("message_cap", size);
          continue;
        }
        stored ??= await repo.storedBytes(workspaceId);
        if (stored + keeping + size > caps.perWorkspaceBytes) {
          drop("workspace_cap", size);
          continue;
        }
        out.keep.push({ part, bytes: decoded.bytes });
        keeping += size;
      }
      return out;
    },

    /** Keeps the checked parts attached to thread message `messageId`, in the caller's unit of work. */
    async keep(messageId: number, checked: CheckedParts): Promise<KeptAttachment[]> {
      const at = deps.clock.now();
      const kept: KeptAttachment[] = [];
      for (const { part, bytes } of checked.keep) {
        const record = {
          threadMessageId: messageId,
          partId: part.partId,
          contentType: part.contentType,
          name: part.name,
          size: bytes.length,
        };
        const id = await repo.insert({ ...record, workspaceId: checked.workspaceId, data: bytes, createdAt: at });
        kept.push({ id, ...record, createdAt: at, served: servedAs(part.contentType) });
      }
      const received = checked.receivedBytes;
      const keptBytes = kept.reduce((sum, a) => sum + a.size, 0);
      if (deps.onReceived && received > 0) deps.storage.afterCommit(() => deps.onReceived?.(received, keptBytes));
      return kept;
    },

    /** The attachments of these thread messages, by message id, without their bytes. */
    async ofMessages(messageIds: number[]): Promise<Map<number, AttachmentMeta[]>> {
      const byMessage = new Map<number, AttachmentMeta[]>();
      for (const a of await repo.ofMessages(messageIds)) {
        const list = byMessage.get(a.threadMessageId);
        if (list) list.push(a);
        else byMessage.set(a.threadMessageId, [a]);
      }
      return byMessage;
    },

    /** The first picture of each thread's newest message, by thread id (the inbox's thumbnails). */
    async newestPictures(workspaceId: number, threadIds: number[]): Promise<Map<number, AttachmentMeta>> {
      const pictures = new Map<number, AttachmentMeta>();
      for (const a of await repo.ofNewest(workspaceId, threadIds))
        if (!pictures.has(a.threadId) && servedAs(a.contentType).image) pictures.set(a.threadId, a);
      return pictures;
    },

    /** One attachment with its bytes, under the workspace's tenancy; null when it is not the workspace's. */
    open: (workspaceId: number, threadId: number, messageId: number, attachmentId: number): Promise<AttachmentRecord | null> =>
      repo.one(workspaceId, threadId, messageId, attachmentId),
  };
}

export type Attachments = ReturnType<typeof createAttachments>;

/** Where the API serves an attachment (a path under the thread routes). */
export const attachmentPath = (threadId: number, messageId: number, attachmentId: number) =>
  `/v1/api/thread/${threadId}/message/${messageId}/attachment/${attachmentId}`;
