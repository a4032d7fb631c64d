// Reading the TwiML an incoming-message URL answers with: the `<Message>` elements of its
// `<Response>`, each a reply (its text directly inside, or in a `<Body>`; a `to` attribute sends it
// to another number instead of the sender). Nothing else in TwiML is acted on: what is skipped is
// named, so the log can say why a reply did not go.

export interface TwimlReply {
  /** The number the reply goes to, when the element names one (else the sender). */
  to: string | null;
  body: string;
}

export interface TwimlAnswer {
  replies: TwimlReply[];
  /** What was there but is not acted on (`<Media>`, `<Redirect>`, …), for the log. */
  ignored: string[];
}

/** At most this many replies are taken from one answer. */
export const MAX_TWIML_REPLIES = 10;
/** Twilio's own limit on a message's text. */
export const MAX_TWIML_BODY = 1600;

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

function decode(text: string): string {
  return text.replace(/&(#x[0-9a-fA-F]{1,6}|#[0-9]{1,7}|amp|lt|gt|quot|apos);/g, (whole, name: string) => {
    if (name[0] !== "#") return ENTITIES[name];
    const code = name[1] === "x" ? Number.parseInt(name.slice(2), 16) : Number.parseInt(name.slice(1), 10);
    return code <= 0x10ffff ? String.fromCodePoint(code) : whole;
  });
}

function attribute(attrs: string, name: string): string | null {
  // A tag's attributes are short; a huge one is no TwiML Pigeon reads (and would cost a long scan).
  if (attrs.length > 2048) return null;
  for (const m of attrs.matchAll(/([\w:-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/g))
    if (m[1].toLowerCase() === name) return decode(m[2] ?? m[3] ?? "");
  return null;
}

type Token =
  | { kind: "open"; name: string; attrs: string; closed: boolean }
  | { kind: "close"; name: string }
  | { kind: "text"; text: string };

/** The tags and text of a document, by one pass with indexOf (each step moves past what it read). */
function tokens(xml: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < xml.length) {
    const lt = xml.indexOf("<", i);
    if (lt === -1) {
      out.push({ kind: "text", text: decode(xml.slice(i)) });
      break;
    }
    if (lt > i) out.push({ kind: "text", text: decode(xml.slice(i, lt)) });
    if (xml.startsWith("<![CDATA[", lt)) {
      const end = xml.indexOf("]]>", lt + 9);
      out.push({ kind: "text", text: xml.slice(lt + 9, end === -1 ? xml.length : end) });
      i = end === -1 ? xml.length : end + 3;
      continue;
    }
    if (xml.startsWith("<!--", lt)) {
      const end = xml.indexOf("-->", lt + 4);
      i = end === -1 ? xml.length : end + 3;
      continue;
    }
    const gt = xml.indexOf(">", lt);
    if (gt === -1) {
      out.push({ kind: "text", text: xml.slice(lt) });
      break;
    }
    const tag = xml.slice(lt + 1, gt);
    i = gt + 1;
    if (tag.startsWith("?") || tag.startsWith("!")) continue;
    if (tag.startsWith("/")) {
      out.push({ kind: "close", name: tag.slice(1).trim() });
      continue;
    }
    const closed = tag.endsWith("/");
    const inner = closed ? tag.slice(0, -1) : tag;
    const space = inner.search(/\s/);
    out.push({
      kind: "open",
      name: space === -1 ? inner : inner.slice(0, space),
      attrs: space === -1 ? "" : inner.slice(space),
      closed,
    });
  }
  return out;
}

/**
 * The replies of a TwiML answer; null when the text is not TwiML (its root is no `<Response>`). An
 * empty `<Response/>` is a valid answer with no reply. One pass over the text, whatever it holds.
 */
export function parseTwiml(xml: string): TwimlAnswer | null {
  const list = tokens(xml.replace(/^\uFEFF/, "")).filter((t) => t.kind !== "text" || t.text.trim() !== "");
  const first = list[0];
  if (!first || first.kind !== "open" || first.name !== "Response") return null;
  const replies: TwimlReply[] = [];
  const ignored: string[] = [];
  if (first.closed) return { replies, ignored };
  // Depth below <Response>; the <Message> being read, with its text outside and inside <Body>.
  let depth = 0;
  let message: { to: string | null; text: string; body: string | null } | null = null;
  let inBody = false;
  let inMedia = false;
  let ended = false;
  for (const t of list.slice(1)) {
    if (ended) return null;
    if (t.kind === "open") {
      if (depth === 0) {
        if (t.name === "Message") message = { to: attribute(t.attrs, "to"), text: "", body: null };
        else ignored.push(`<${t.name}>`);
      } else if (message && t.name === "Body" && !t.closed) {
        inBody = true;
        message.body ??= "";
      } else if (message && t.name === "Media") {
        ignored.push("<Media>");
        inMedia = !t.closed;
      }
      if (!t.closed) depth++;
      else if (depth === 0 && message) {
        message = null;
      }
    } else if (t.kind === "close") {
      if (depth === 0) {
        if (t.name !== "Response") return null;
        ended = true;
        continue;
      }
      depth--;
      if (t.name === "Body") inBody = false;
      if (t.name === "Media") inMedia = false;
      if (depth === 0 && message) {
        const text = (message.body ?? message.text).trim();
        if (text !== "") replies.push({ to: message.to, body: text.slice(0, MAX_TWIML_BODY) });
        message = null;
      }
    } else if (message && !inMedia) {
      if (inBody) message.body += t.text;
      else if (depth === 1) message.text += t.text;
    }
  }
  if (!ended) return null;
  if (replies.length > MAX_TWIML_REPLIES)
    ignored.push(`${replies.length - MAX_TWIML_REPLIES} <Message> beyond the first ${MAX_TWIML_REPLIES}`);
  return { replies: replies.slice(0, MAX_TWIML_REPLIES), ignored };
}
