// Finds links in message text, for plans that forbid URLs.
const SCHEME_OR_WWW = /\b(?:https?:\/\/|www\.)\S+/i;
// Bare domains people paste: "example.com", "bit.ly/x". A dot followed by a known TLD at a word end.
const BARE_DOMAIN =
  /\b[a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)*\.(?:com|net|org|io|co|ly|me|app|link|info|biz|xyz|us|uk|de|ru|in|gl|gg|to|sh|site|online|shop|store|page|dev)\b(?:\/\S*)?/i;

/** The first thing in `text` that looks like a URL, or null. */
export function findUrl(text: string): string | null {
  return SCHEME_OR_WWW.exec(text)?.[0] ?? BARE_DOMAIN.exec(text)?.[0] ?? null;
}
