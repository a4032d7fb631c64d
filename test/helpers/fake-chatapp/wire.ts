// Small conversions the platform's wire format needs in more than one place.
import { randomBytes } from "node:crypto";

export const newWamid = () => `wamid.${randomBytes(32).toString("base64")}`;
export const digits = (s: string) => s.replace(/\D/g, "");
export const unixSeconds = (ms: number) => String(Math.floor(ms / 1000));
