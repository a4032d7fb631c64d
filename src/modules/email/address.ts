// Who an email's recipient address names. The local part is a phone number (`+`, spaces and
// punctuation allowed: `+1 (555) 123-4567`, `15551234567`, `0301234567` read with the workspace's
// default country), a contact's name (`ana.lopez` or `"Ana Lopez"`), or a tag of contacts for a
// bulk (`tag-customers`, `#customers`). A secret address carries the workspace's token before a
// `+` (`<token>+15551234567@…`). The domain is not read: the user points whatever domain they like
// at the listener. Pure; the listener resolves names and tags.
import { toE164, toE164In } from "../../lib/phone";

export type RecipientRef =
  | { kind: "number"; phone: string }
  | { kind: "name"; name: string }
  | { kind: "tag"; tag: string }
  | { kind: "invalid"; reason: string };

/** A number's characters besides its digits and a leading +. */
const NUMBER_SHAPE = /^\+?[\d\s().\-/]{1,30}$/;
/** A tag's forms: tag-NAME, tag.NAME, tag_NAME, or #NAME. */
const TAG_FORM = /^(?:tag[-._]|#)(.+)$/i;
/** The secret token's alphabet, as it is issued (letters and digits). */
const TOKEN_FORM = /^([A-Za-z0-9]{16,64})\+(.+)$/;

/** The local part and the domain of an address, the local part unquoted. */
export function splitAddress(address: string): { local: string; domain: string } {
  const at = address.lastIndexOf("@");
  const local = (at === -1 ? address : address.slice(0, at)).trim();
  const domain =
    at === -1
      ? ""
      : address
          .slice(at + 1)
          .trim()
          .toLowerCase();
  const unquoted = /^"(.*)"$/.exec(local)?.[1]?.replace(/\\(.)/g, "$1") ?? local;
  return { local: unquoted, domain };
}

/** A secret address's token and the rest of its local part; null when it carries none. */
export function secretTokenOf(local: string): { token: string; rest: string } | null {
  const match = TOKEN_FORM.exec(local);
  return match ? { token: match[1], rest: match[2] } : null;
}

/** A phone number in E.164 from a local part, reading a national number with `country`; null when it is not one. */
export function numberOf(local: string, country: string | null): string | null {
  if (!NUMBER_SHAPE.test(local)) return null;
  const digits = local.replace(/[^\d+]/g, "");
  if (digits.startsWith("+")) return toE164(digits);
  const national = toE164In(digits, country?.toUpperCase() ?? null);
  if (national !== null) return national;
  // Digits alone, as alarm panels write them: a full international number without its +.
  return toE164(`+${digits}`);
}

/** What a recipient's local part names (see the file's head). */
export function recipientOf(local: string, country: string | null): RecipientRef {
  const text = local.trim();
  if (text === "") return { kind: "invalid", reason: "The address has no local part" };
  const tag = TAG_FORM.exec(text);
  if (tag) return { kind: "tag", tag: tag[1] };
  if (NUMBER_SHAPE.test(text)) {
    const phone = numberOf(text, country);
    return phone
      ? { kind: "number", phone }
      : {
          kind: "invalid",
          reason: country
            ? `${text} is not a phone number (read with the default country ${country.toUpperCase()})`
            : `${text} is not a phone number with its country code (set the workspace's default country to send to national numbers)`,
        };
  }
  return { kind: "name", name: text.replace(/[._]+/g, " ").trim() };
}
