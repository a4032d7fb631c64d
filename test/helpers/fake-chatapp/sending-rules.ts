// The platform's limits a send is held to: media types and sizes, pacing per number and per
// recipient, and the placeholders a template's text expects.

/** Meta's media limits (reference section 6), used for links that point at this fake's /media/. */
export const MEDIA_LIMITS: Record<string, { types: string[]; maxBytes: number }> = {
  image: { types: ["image/jpeg", "image/png"], maxBytes: 5 * 1024 * 1024 },
  video: { types: ["video/mp4", "video/3gpp"], maxBytes: 16 * 1024 * 1024 },
  audio: { types: ["audio/aac", "audio/amr", "audio/mpeg", "audio/mp4", "audio/ogg"], maxBytes: 16 * 1024 * 1024 },
  document: {
    types: [
      "text/plain",
      "application/pdf",
      "application/msword",
      "application/vnd.ms-excel",
      "application/vnd.ms-powerpoint",
      "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
      "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
      "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ],
    maxBytes: 100 * 1024 * 1024,
  },
  sticker: { types: ["image/webp"], maxBytes: 500 * 1024 },
};

export class TokenBucket {
  private tokens: number;
  private last: number;
  constructor(
    private readonly capacity: number,
    /** One token comes back every refillMs. */
    private readonly refillMs: number,
    now: number,
  ) {
    this.tokens = capacity;
    this.last = now;
  }
  take(now: number): boolean {
    // elapsed / refillMs rather than elapsed * rate keeps whole intervals exact in floating point.
    this.tokens = Math.min(this.capacity, this.tokens + Math.max(0, now - this.last) / this.refillMs);
    this.last = Math.max(this.last, now);
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

/** Distinct {{…}} placeholders in a template text: "{{1}} … {{2}} … {{1}}" has two. */
export function placeholders(text: unknown): string[] {
  if (typeof text !== "string") return [];
  return [...new Set([...text.matchAll(/\{\{\s*([^{}\s]+)\s*\}\}/g)].map((m) => m[1]))];
}
