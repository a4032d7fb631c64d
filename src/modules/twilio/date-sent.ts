// Twilio's DateSent filters on Messages.json, as its libraries send them: `DateSent`, `DateSent<`
// and `DateSent>` each take a bare date (YYYY-MM-DD: a whole UTC day) or an ISO 8601 date-time
// (what twilio-node's dateSent, dateSentBefore and dateSentAfter serialise a Date to: to the
// second, with Z or an offset). A bare date means its day: DateSent that day, `DateSent<` on or
// before it, `DateSent>` on or after it. A date-time means its second: DateSent sent within it,
// `DateSent<` at or before it, `DateSent>` at or after it. Anything else is Twilio's 400 (20001).
import { AppError } from "../../core/errors";

const DAY_MS = 86_400_000;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

/** The span a value names: [from, to) in epoch ms; null when it is neither form or no real date. */
export function spanOf(value: string): { from: number; to: number } | null {
  const date = DATE.exec(value);
  if (date) {
    const at = Date.UTC(Number(date[1]), Number(date[2]) - 1, Number(date[3]));
    return new Date(at).toISOString().slice(0, 10) === value ? { from: at, to: at + DAY_MS } : null;
  }
  const time = DATE_TIME.exec(value);
  if (!time) return null;
  const [, y, mo, d, h, mi, s, , zone] = time;
  const wall = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s));
  // The wall clock must be a real one (no 2026-02-30, no 25:00), and the offset a real offset.
  if (new Date(wall).toISOString().slice(0, 19) !== `${y}-${mo}-${d}T${h}:${mi}:${s}`) return null;
  let offset = 0;
  if (zone !== "Z") {
    const hours = Number(zone.slice(1, 3));
    const minutes = Number(zone.slice(4, 6));
    if (hours > 23 || minutes > 59) return null;
    offset = (zone[0] === "-" ? -1 : 1) * (hours * 60 + minutes) * 60_000;
  }
  const from = wall - offset;
  return { from, to: from + 1000 };
}

/** sent_at within [sentFrom, sentTo) for the query's DateSent filters; 400 (20001) for a value it cannot read. */
export function sentWindow(query: Record<string, string | undefined>): { sentFrom?: number; sentTo?: number } {
  const read = (field: "DateSent" | "DateSent<" | "DateSent>") => {
    const value = query[field];
    if (value === undefined || value === "") return null;
    const span = spanOf(value);
    if (!span)
      throw new AppError(
        "validation_error",
        `${field} must be a date (YYYY-MM-DD) or an ISO 8601 date-time (YYYY-MM-DDThh:mm:ssZ), not "${value.slice(0, 40)}".`,
        { field },
        20001,
      );
    return span;
  };
  const on = read("DateSent");
  const before = read("DateSent<");
  const after = read("DateSent>");
  const froms = [on?.from, after?.from].filter((x): x is number => x !== undefined);
  const tos = [on?.to, before?.to].filter((x): x is number => x !== undefined);
  return {
    ...(froms.length ? { sentFrom: Math.max(...froms) } : {}),
    ...(tos.length ? { sentTo: Math.min(...tos) } : {}),
  };
}
