// SMS segment counting, for credits: GSM-7 fits 160 characters in one SMS and 153 per part of a
// longer one; anything outside GSM-7 is sent as UCS-2, 70 in one SMS and 67 per part.

export const GSM7_BASIC =
  "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞ\x1bÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà";
// The extension table: each of these takes two septets (escape + char).
export const GSM7_EXTENDED = "^{}\\[~]|€\f";

const basic = new Set(GSM7_BASIC);
const extended = new Set(GSM7_EXTENDED);

export interface SegmentInfo {
  encoding: "GSM-7" | "UCS-2";
  /** Septets for GSM-7, UTF-16 code units for UCS-2. */
  units: number;
  segments: number;
}

export function countSegments(text: string): SegmentInfo {
  let septets = 0;
  for (const ch of text) {
    if (basic.has(ch)) septets += 1;
    else if (extended.has(ch)) septets += 2;
    else {
      const units = text.length;
      return { encoding: "UCS-2", units, segments: units <= 70 ? 1 : Math.ceil(units / 67) };
    }
  }
  return { encoding: "GSM-7", units: septets, segments: septets <= 160 ? 1 : Math.ceil(septets / 153) };
}

/** The characters of `text` outside the GSM-7 alphabet (each once, in order): what forces UCS-2. */
export function ucs2Characters(text: string): string[] {
  const found: string[] = [];
  for (const ch of text) if (!basic.has(ch) && !extended.has(ch) && !found.includes(ch)) found.push(ch);
  return found;
}
