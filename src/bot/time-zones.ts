/**
 * Time-zone abbreviations people type (`PST`, `CET`) and the IANA zones they most likely mean.
 * An abbreviation names a UTC offset, not a place: it does not say when daylight saving starts (PST
 * is UTC−8 in winter only), and several mean different places (CST: US Central or China). So a
 * digest is never scheduled in one; the answer names the zone to use instead. This is data the
 * time-zone database does not carry (it has only a few, such as EST, as fixed offsets).
 */
const ZONES_BY_ABBREVIATION: Readonly<Record<string, readonly string[]>> = {
  PST: ['America/Los_Angeles'],
  PDT: ['America/Los_Angeles'],
  PT: ['America/Los_Angeles'],
  MST: ['America/Denver', 'America/Phoenix'],
  MDT: ['America/Denver'],
  MT: ['America/Denver'],
  CST: ['America/Chicago', 'Asia/Shanghai'],
  CDT: ['America/Chicago'],
  CT: ['America/Chicago'],
  EST: ['America/New_York'],
  EDT: ['America/New_York'],
  ET: ['America/New_York'],
  AKST: ['America/Anchorage'],
  AKDT: ['America/Anchorage'],
  HST: ['Pacific/Honolulu'],
  AST: ['America/Halifax'],
  NST: ['America/St_Johns'],
  BRT: ['America/Sao_Paulo'],
  ART: ['America/Argentina/Buenos_Aires'],
  WET: ['Europe/Lisbon'],
  WEST: ['Europe/Lisbon'],
  BST: ['Europe/London'],
  IST: ['Asia/Kolkata', 'Europe/Dublin', 'Asia/Jerusalem'],
  CET: ['Europe/Paris', 'Europe/Berlin'],
  CEST: ['Europe/Paris', 'Europe/Berlin'],
  EET: ['Europe/Athens', 'Europe/Kyiv'],
  EEST: ['Europe/Athens', 'Europe/Kyiv'],
  MSK: ['Europe/Moscow'],
  GST: ['Asia/Dubai'],
  PKT: ['Asia/Karachi'],
  ICT: ['Asia/Bangkok'],
  WIB: ['Asia/Jakarta'],
  SGT: ['Asia/Singapore'],
  HKT: ['Asia/Hong_Kong'],
  PHT: ['Asia/Manila'],
  KST: ['Asia/Seoul'],
  JST: ['Asia/Tokyo'],
  AWST: ['Australia/Perth'],
  ACST: ['Australia/Adelaide'],
  AEST: ['Australia/Sydney'],
  AEDT: ['Australia/Sydney'],
  NZST: ['Pacific/Auckland'],
  NZDT: ['Pacific/Auckland'],
  WAT: ['Africa/Lagos'],
  CAT: ['Africa/Maputo'],
  EAT: ['Africa/Nairobi'],
  SAST: ['Africa/Johannesburg'],
};

/** The IANA zones a time-zone abbreviation most likely means (any case), or undefined when it is none. */
export function zonesForAbbreviation(word: string): readonly string[] | undefined {
  const key = word.trim().toUpperCase();
  return Object.hasOwn(ZONES_BY_ABBREVIATION, key) ? ZONES_BY_ABBREVIATION[key] : undefined;
}
