// Quiet hours: a text waits while it is night where its recipient lives. The recipient's zone is
// guessed from the number's country; local clocks are read with Intl alone, DST nights included.
import { parsePhoneNumberFromString } from "libphonenumber-js/min";
import metadata from "libphonenumber-js/min/metadata";
import { DAY, MINUTE } from "./time";

/**
 * ISO 3166-1 alpha-2 country code → the IANA zone where most of its people live. Generated once from
 * tzdata's zone.tab (2025b, every country it lists) and kept here because that file may be missing
 * where Pigeon runs. Countries with several zones have the populous one picked by hand (US New York,
 * RU Moscow, BR São Paulo, CA Toronto, AU Sydney, PS Hebron for the West Bank, …); AC, TA and XK are
 * added because libphonenumber-js reports them and zone.tab does not list them. Every name is one
 * the runtime's Intl accepts (America/Coyhaique, which it lacks, is no country's pick).
 */
export const COUNTRY_ZONES: Readonly<Record<string, string>> = Object.freeze({
  AC: "Atlantic/St_Helena",
  AD: "Europe/Andorra",
  AE: "Asia/Dubai",
  AF: "Asia/Kabul",
  AG: "America/Antigua",
  AI: "America/Anguilla",
  AL: "Europe/Tirane",
  AM: "Asia/Yerevan",
  AO: "Africa/Luanda",
  AQ: "Antarctica/McMurdo",
  AR: "America/Argentina/Buenos_Aires",
  AS: "Pacific/Pago_Pago",
  AT: "Europe/Vienna",
  AU: "Australia/Sydney",
  AW: "America/Aruba",
  AX: "Europe/Mariehamn",
  AZ: "Asia/Baku",
  BA: "Europe/Sarajevo",
  BB: "America/Barbados",
  BD: "Asia/Dhaka",
  BE: "Europe/Brussels",
  BF: "Africa/Ouagadougou",
  BG: "Europe/Sofia",
  BH: "Asia/Bahrain",
  BI: "Africa/Bujumbura",
  BJ: "Africa/Porto-Novo",
  BL: "America/St_Barthelemy",
  BM: "Atlantic/Bermuda",
  BN: "Asia/Brunei",
  BO: "America/La_Paz",
  BQ: "America/Kralendijk",
  BR: "America/Sao_Paulo",
  BS: "America/Nassau",
  BT: "Asia/Thimphu",
  BW: "Africa/Gaborone",
  BY: "Europe/Minsk",
  BZ: "America/Belize",
  CA: "America/Toronto",
  CC: "Indian/Cocos",
  CD: "Africa/Kinshasa",
  CF: "Africa/Bangui",
  CG: "Africa/Brazzaville",
  CH: "Europe/Zurich",
  CI: "Africa/Abidjan",
  CK: "Pacific/Rarotonga",
  CL: "America/Santiago",
  CM: "Africa/Douala",
  CN: "Asia/Shanghai",
  CO: "America/Bogota",
  CR: "America/Costa_Rica",
  CU: "America/Havana",
  CV: "Atlantic/Cape_Verde",
  CW: "America/Curacao",
  CX: "Indian/Christmas",
  CY: "Asia/Nicosia",
  CZ: "Europe/Prague",
  DE: "Europe/Berlin",
  DJ: "Africa/Djibouti",
  DK: "Europe/Copenhagen",
  DM: "America/Dominica",
  DO: "America/Santo_Domingo",
  DZ: "Africa/Algiers",
  EC: "America/Guayaquil",
  EE: "Europe/Tallinn",
  EG: "Africa/Cairo",
  EH: "Africa/El_Aaiun",
  ER: "Africa/Asmara",
  ES: "Europe/Madrid",
  ET: "Africa/Addis_Ababa",
  FI: "Europe/Helsinki",
  FJ: "Pacific/Fiji",
  FK: "Atlantic/Stanley",
  FM: "Pacific/Pohnpei",
  FO: "Atlantic/Faroe",
  FR: "Europe/Paris",
  GA: "Africa/Libreville",
  GB: "Europe/London",
  GD: "America/Grenada",
  GE: "Asia/Tbilisi",
  GF: "America/Cayenne",
  GG: "Europe/Guernsey",
  GH: "Africa/Accra",
  GI: "Europe/Gibraltar",
  GL: "America/Nuuk",
  GM: "Africa/Banjul",
  GN: "Africa/Conakry",
  GP: "America/Guadeloupe",
  GQ: "Africa/Malabo",
  GR: "Europe/Athens",
  GS: "Atlantic/South_Georgia",
  GT: "America/Guatemala",
  GU: "Pacific/Guam",
  GW: "Africa/Bissau",
  GY: "America/Guyana",
  HK: "Asia/Hong_Kong",
  HN: "America/Tegucigalpa",
  HR: "Europe/Zagreb",
  HT: "America/Port-au-Prince",
  HU: "Europe/Budapest",
  ID: "Asia/Jakarta",
  IE: "Europe/Dublin",
  IL: "Asia/Jerusalem",
  IM: "Europe/Isle_of_Man",
  IN: "Asia/Kolkata",
  IO: "Indian/Chagos",
  IQ: "Asia/Baghdad",
  IR: "Asia/Tehran",
  IS: "Atlantic/Reykjavik",
  IT: "Europe/Rome",
  JE: "Europe/Jersey",
  JM: "America/Jamaica",
  JO: "Asia/Amman",
  JP: "Asia/Tokyo",
  KE: "Africa/Nairobi",
  KG: "Asia/Bishkek",
  KH: "Asia/Phnom_Penh",
  KI: "Pacific/Tarawa",
  KM: "Indian/Comoro",
  KN: "America/St_Kitts",
  KP: "Asia/Pyongyang",
  KR: "Asia/Seoul",
  KW: "Asia/Kuwait",
  KY: "America/Cayman",
  KZ: "Asia/Almaty",
  LA: "Asia/Vientiane",
  LB: "Asia/Beirut",
  LC: "America/St_Lucia",
  LI: "Europe/Vaduz",
  LK: "Asia/Colombo",
  LR: "Africa/Monrovia",
  LS: "Africa/Maseru",
  LT: "Europe/Vilnius",
  LU: "Europe/Luxembourg",
  LV: "Europe/Riga",
  LY: "Africa/Tripoli",
  MA: "Africa/Casablanca",
  MC: "Europe/Monaco",
  MD: "Europe/Chisinau",
  ME: "Europe/Podgorica",
  MF: "America/Marigot",
  MG: "Indian/Antananarivo",
  MH: "Pacific/Majuro",
  MK: "Europe/Skopje",
  ML: "Africa/Bamako",
  MM: "Asia/Yangon",
  MN: "Asia/Ulaanbaatar",
  MO: "Asia/Macau",
  MP: "Pacific/Saipan",
  MQ: "America/Martinique",
  MR: "Africa/Nouakchott",
  MS: "America/Montserrat",
  MT: "Europe/Malta",
  MU: "Indian/Mauritius",
  MV: "Indian/Maldives",
  MW: "Africa/Blantyre",
  MX: "America/Mexico_City",
  MY: "Asia/Kuala_Lumpur",
  MZ: "Africa/Maputo",
  NA: "Africa/Windhoek",
  NC: "Pacific/Noumea",
  NE: "Africa/Niamey",
  NF: "Pacific/Norfolk",
  NG: "Africa/Lagos",
  NI: "America/Managua",
  NL: "Europe/Amsterdam",
  NO: "Europe/Oslo",
  NP: "Asia/Kathmandu",
  NR: "Pacific/Nauru",
  NU: "Pacific/Niue",
  NZ: "Pacific/Auckland",
  OM: "Asia/Muscat",
  PA: "America/Panama",
  PE: "America/Lima",
  PF: "Pacific/Tahiti",
  PG: "Pacific/Port_Moresby",
  PH: "Asia/Manila",
  PK: "Asia/Karachi",
  PL: "Europe/Warsaw",
  PM: "America/Miquelon",
  PN: "Pacific/Pitcairn",
  PR: "America/Puerto_Rico",
  PS: "Asia/Hebron",
  PT: "Europe/Lisbon",
  PW: "Pacific/Palau",
  PY: "America/Asuncion",
  QA: "Asia/Qatar",
  RE: "Indian/Reunion",
  RO: "Europe/Bucharest",
  RS: "Europe/Belgrade",
  RU: "Europe/Moscow",
  RW: "Africa/Kigali",
  SA: "Asia/Riyadh",
  SB: "Pacific/Guadalcanal",
  SC: "Indian/Mahe",
  SD: "Africa/Khartoum",
  SE: "Europe/Stockholm",
  SG: "Asia/Singapore",
  SH: "Atlantic/St_Helena",
  SI: "Europe/Ljubljana",
  SJ: "Arctic/Longyearbyen",
  SK: "Europe/Bratislava",
  SL: "Africa/Freetown",
  SM: "Europe/San_Marino",
  SN: "Africa/Dakar",
  SO: "Africa/Mogadishu",
  SR: "America/Paramaribo",
  SS: "Africa/Juba",
  ST: "Africa/Sao_Tome",
  SV: "America/El_Salvador",
  SX: "America/Lower_Princes",
  SY: "Asia/Damascus",
  SZ: "Africa/Mbabane",
  TA: "Atlantic/St_Helena",
  TC: "America/Grand_Turk",
  TD: "Africa/Ndjamena",
  TF: "Indian/Kerguelen",
  TG: "Africa/Lome",
  TH: "Asia/Bangkok",
  TJ: "Asia/Dushanbe",
  TK: "Pacific/Fakaofo",
  TL: "Asia/Dili",
  TM: "Asia/Ashgabat",
  TN: "Africa/Tunis",
  TO: "Pacific/Tongatapu",
  TR: "Europe/Istanbul",
  TT: "America/Port_of_Spain",
  TV: "Pacific/Funafuti",
  TW: "Asia/Taipei",
  TZ: "Africa/Dar_es_Salaam",
  UA: "Europe/Kyiv",
  UG: "Africa/Kampala",
  UM: "Pacific/Wake",
  US: "America/New_York",
  UY: "America/Montevideo",
  UZ: "Asia/Tashkent",
  VA: "Europe/Vatican",
  VC: "America/St_Vincent",
  VE: "America/Caracas",
  VG: "America/Tortola",
  VI: "America/St_Thomas",
  VN: "Asia/Ho_Chi_Minh",
  VU: "Pacific/Efate",
  WF: "Pacific/Wallis",
  WS: "Pacific/Apia",
  XK: "Europe/Belgrade",
  YE: "Asia/Aden",
  YT: "Indian/Mayotte",
  ZA: "Africa/Johannesburg",
  ZM: "Africa/Lusaka",
  ZW: "Africa/Harare",
});

/** Calling code → the countries sharing it, the main one first (+1 → US, +7 → RU, +44 → GB). */
const CALLING_CODES: Record<string, string[]> = metadata.country_calling_codes;

/**
 * The time zone of the country an E.164 number belongs to, or null when `e164` is not a possible
 * phone number or its calling code is not a country's (+800, +882, …). Inside a shared calling code
 * the library tells the country from the area code where it can (+1 416 → CA); where it cannot
 * (+1 555 …) the code's main country stands in, so every possible number gets a zone.
 */
export function zoneForNumber(e164: string): string | null {
  const parsed = parsePhoneNumberFromString(e164);
  if (!parsed?.isPossible()) return null;
  const country = parsed.country ?? CALLING_CODES[parsed.countryCallingCode]?.[0];
  return country ? (COUNTRY_ZONES[country] ?? null) : null;
}

const CLOCK = /^([01]\d|2[0-3]):([0-5]\d)$/;

/** Minutes after midnight of a 24-hour "HH:MM" (two digits each, 00:00–23:59), or null. */
export function parseClock(text: string): number | null {
  const m = CLOCK.exec(text);
  return m ? Number(m[1]) * 60 + Number(m[2]) : null;
}

/** "HH:MM" for minutes after midnight (0–1439); a RangeError for anything else. */
export function formatClock(minutes: number): string {
  checkMinutes(minutes, "minutes");
  return `${String(Math.floor(minutes / 60)).padStart(2, "0")}:${String(minutes % 60).padStart(2, "0")}`;
}

function checkMinutes(value: number, name: string): void {
  if (!Number.isInteger(value) || value < 0 || value >= 24 * 60) {
    throw new RangeError(`${name} must be a whole number of minutes after midnight (0-1439), got ${value}`);
  }
}

/** One formatter per zone: building one costs far more than using it. */
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    formatters.set(zone, f);
  }
  return f;
}

/** The wall clock in `zone` at instant `at`, as if it were a UTC time (so offset = wall − at). */
function wallClock(at: number, zone: string): number {
  const p: Record<string, number> = {};
  for (const part of formatter(zone).formatToParts(at)) {
    if (part.type !== "literal") p[part.type] = Number(part.value);
  }
  // Some ICU versions say 24 for midnight even in h23.
  return Date.UTC(p.year, p.month - 1, p.day, p.hour % 24, p.minute, p.second);
}

/** Milliseconds since the midnight of a wall clock, for instants before 1970 too. */
function timeOfDay(wall: number): number {
  return ((wall % DAY) + DAY) % DAY;
}

/** The zone's UTC offset in ms at instant `at` (whole seconds; ms are not part of an offset). */
function offsetAt(at: number, zone: string): number {
  return wallClock(at, zone) - Math.floor(at / 1000) * 1000;
}

/**
 * Minutes after local midnight in `zone` at epoch ms `at`. A zone Intl does not know is a RangeError.
 */
export function localMinutes(at: number, zone: string): number {
  return Math.floor(timeOfDay(wallClock(at, zone)) / MINUTE);
}

/** The day of the week in `zone` at epoch ms `at`: 0 is Sunday. */
export function localWeekday(at: number, zone: string): number {
  return new Date(wallClock(at, zone)).getUTCDay();
}

/**
 * The instants at which the clock in `zone` reads `wall` (a local time written as UTC ms): one, two
 * when clocks go back over it (earlier first), or, when clocks jump over it, the one at which the
 * jump lands. Offsets are read a day either side; no real zone changes twice within two days.
 */
function instantsOf(wall: number, zone: string): number[] {
  const before = offsetAt(wall - DAY, zone);
  const after = offsetAt(wall + DAY, zone);
  if (before === after) return [wall - before];
  const found = [wall - before, wall - after].filter((t, i) => offsetAt(t, zone) === (i === 0 ? before : after));
  if (found.length > 0) return found.sort((a, b) => a - b);
  // In the gap: the transition lies between the two guesses; halve down to the minute it happens.
  let lo = wall - after; // still on the old offset
  let hi = wall - before; // already on the new one
  while (hi - lo > MINUTE) {
    const mid = lo + Math.floor((hi - lo) / (2 * MINUTE)) * MINUTE;
    if (offsetAt(mid, zone) === after) hi = mid;
    else lo = mid;
  }
  return [hi];
}

/**
 * When quiet hours from local `start` to local `end` (minutes after midnight; start > end wraps past
 * midnight, start === end means none) hold in `zone` at epoch ms `at`: the epoch ms of the next
 * instant whose local clock reads `end` (seconds 0), when sending may resume. Null when `at` is
 * outside them. An `end` that a spring-forward night skips means the moment clocks land after the
 * jump; one repeated on a fall-back night means its first occurrence still ahead of `at`.
 */
export function quietUntil(at: number, zone: string, start: number, end: number): number | null {
  checkMinutes(start, "start");
  checkMinutes(end, "end");
  if (start === end) return null;
  const wall = wallClock(at, zone);
  const now = Math.floor(timeOfDay(wall) / MINUTE);
  const inside = start < end ? now >= start && now < end : now >= start || now < end;
  if (!inside) return null;
  const midnight = wall - timeOfDay(wall);
  // Today's `end` unless it is already past on the clock; a repeated hour may still put it behind `at`.
  for (let day = now < end ? 0 : 1; day <= 2; day++) {
    const next = instantsOf(midnight + day * DAY + end * MINUTE, zone).find((t) => t > at);
    if (next !== undefined) return next;
  }
  throw new Error(`no local ${formatClock(end)} in ${zone} after ${new Date(at).toISOString()}`);
}
