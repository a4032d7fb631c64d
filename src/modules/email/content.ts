// What an email becomes as an SMS: the text the workspace chose (the body, the subject, or both),
// plain text even when the mail had only HTML, without the quoted reply and the signature the
// sender's mail program added, a note for the attachments that cannot go, and cut to the account's
// length cap with a visible marker rather than refused. Pure: the listener hands it a parsed mail.

/** Which part of an email is the text of the SMS (a workspace setting; default the body). */
export const EMAIL_CONTENTS = ["body", "subject", "both"] as const;
export type EmailContent = (typeof EMAIL_CONTENTS)[number];

/** What the conversion needs of a parsed email (mailparser's ParsedMail has these fields). */
export interface MailParts {
  subject?: string;
  text?: string;
  /** HTML, or false when the mail has none (mailparser's convention). */
  html?: string | false;
  attachments?: readonly unknown[];
}

/** Appended to a text cut to the cap, so the reader knows there was more. */
export const CUT_MARKER = " [cut]";

/** A line that opens a quoted reply ("On Mon, 1 Dec 2026, Ana <ana@…> wrote:"), in a few languages' usual forms. */
const REPLY_HEADER =
  /^(on\s.+\swrote:|le\s.+\sa écrit\s?:|am\s.+\sschrieb\s.+:|el\s.+\sescribió:|-{2,}\s*original message\s*-{2,}|_{5,})\s*$/i;
/** An Outlook-style forward or reply block ("From: …" on its own line after a blank line). */
const OUTLOOK_HEADER = /^from:\s.+$/i;

/** Plain text from HTML: tags dropped, blocks and breaks made lines, the common entities decoded. */
export function textOfHtml(html: string): string {
  return html
    .replace(/<(script|style|head)\b[^>]*>[\s\S]*?<\/\1\s*>/gi, "")
    .replace(/<blockquote\b[^>]*>[\s\S]*?<\/blockquote\s*>/gi, "")
    .replace(/<br\s*\/?>/gi, "\n")
    .replace(/<\/(p|div|li|tr|h[1-6])\s*>/gi, "\n")
    .replace(/<[^>]*>/g, "")
    .replace(/&nbsp;/gi, " ")
    .replace(/&lt;/gi, "<")
    .replace(/&gt;/gi, ">")
    .replace(/&quot;/gi, '"')
    .replace(/&#39;|&apos;/gi, "'")
    .replace(/&#(\d+);/g, (_, n: string) => safeCodePoint(Number(n)))
    .replace(/&#x([0-9a-f]+);/gi, (_, n: string) => safeCodePoint(Number.parseInt(n, 16)))
    .replace(/&amp;/gi, "&");
}

function safeCodePoint(n: number): string {
  return Number.isInteger(n) && n > 0 && n <= 0x10ffff ? String.fromCodePoint(n) : "";
}

/**
 * The new text of a message body: the lines before a quoted reply (a line of `>`s, a "… wrote:"
 * header, an Outlook "From:" block) and before the signature separator ("-- " on its own line),
 * with runs of blank lines closed up.
 */
export function freshText(body: string): string {
  const lines = body.replace(/\r\n?/g, "\n").split("\n");
  const kept: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const trimmed = line.trim();
    if (line === "-- " || line === "--") break;
    if (REPLY_HEADER.test(trimmed)) break;
    if (
      OUTLOOK_HEADER.test(trimmed) &&
      (i === 0 || lines[i - 1].trim() === "") &&
      /^(sent|date|to|subject):/i.test(lines[i + 1]?.trim() ?? "")
    )
      break;
    if (trimmed.startsWith(">")) continue;
    kept.push(line.replace(/\s+$/, ""));
  }
  return kept
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}

/** The text of a mail as the workspace asked for it, before the attachments' note and the cap. */
function chosenText(mail: MailParts, content: EmailContent): string {
  const subject = (mail.subject ?? "").replace(/\s+/g, " ").trim();
  const raw = mail.text?.trim() ? mail.text : mail.html ? textOfHtml(mail.html) : "";
  const body = freshText(raw);
  if (content === "subject") return subject || body;
  if (content === "both") return subject && body ? `${subject}\n${body}` : subject || body;
  return body || subject;
}

/** Cuts `text` to `cap` characters (code points), ending with the marker when it was longer. */
export function cutToCap(text: string, cap: number): { text: string; cut: boolean } {
  const chars = Array.from(text);
  if (chars.length <= cap) return { text, cut: false };
  const room = Math.max(0, cap - CUT_MARKER.length);
  return { text: chars.slice(0, room).join("").trimEnd() + CUT_MARKER.slice(0, cap - room), cut: true };
}

/**
 * The SMS an email becomes (see the file's head), at most `cap` characters; empty when the mail
 * has no text at all, which the listener refuses.
 */
export function smsText(mail: MailParts, content: EmailContent, cap: number): { text: string; cut: boolean; attachments: number } {
  let text = chosenText(mail, content);
  const attachments = mail.attachments?.length ?? 0;
  if (attachments > 0 && text) text += attachments === 1 ? "\n[1 attachment not sent]" : `\n[${attachments} attachments not sent]`;
  const fitted = cutToCap(text, cap);
  return { text: fitted.text, cut: fitted.cut, attachments };
}
