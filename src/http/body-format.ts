// How a request body's text becomes a value. JSON is read whatever the declared type, because
// `curl -d '{...}'` without -H sends `application/x-www-form-urlencoded`; a real form (the cloud
// provider's signed status callbacks) stays a form.
import { parseJsonText, scanJson } from "./body";

const FORM = "application/x-www-form-urlencoded";

/** The parsed body: a form's fields as an object, or the JSON value. Throws 400 invalid_json, too_deeply_nested or invalid_unicode. */
export function decodeBody(text: string, contentType: string | null | undefined): unknown {
  if (contentType?.toLowerCase().startsWith(FORM)) {
    const json = jsonLookingForm(text);
    return json === undefined ? Object.fromEntries(new URLSearchParams(text)) : json;
  }
  return parseJsonText(text);
}

/**
 * A "form" body that is really a JSON object or array: its first non-space character is `{` or `[`
 * and it parses. A form field's name never starts that way in practice, and a form such as
 * `{a}=1` does not parse as JSON, so it stays a form.
 */
function jsonLookingForm(text: string): unknown {
  const first = text.trimStart()[0];
  if (first !== "{" && first !== "[") return undefined;
  // The same depth and Unicode checks as any JSON body, before the parser sees it.
  scanJson(text);
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
