// Template variables (spec section 2, rules 1–5): parsing a body's {{placeholders}}, checking the
// supplied values, and rendering the final text.
import type { DeliveryType } from "../../core/kinds";
import { AppError } from "../../core/errors";

const PLACEHOLDER = /\{\{([^{}]*)\}\}/g;
const NAME = /^[A-Za-z0-9_]+$/;
const NUMBERED = /^[1-9][0-9]*$/;

/** The variable names of a body in order of first appearance; throws when the body breaks a rule. */
export function parseTemplateBody(body: string, channel: DeliveryType): string[] {
  const names: string[] = [];
  for (const match of body.matchAll(PLACEHOLDER)) {
    const name = match[1];
    if (!NAME.test(name)) {
      throw new AppError(
        "invalid_template_body",
        `Template variable {{${name}}} is not allowed: names contain only letters, digits and underscores`,
        { variable: name },
      );
    }
    if (channel === "chatapp" && !NUMBERED.test(name)) {
      throw new AppError("invalid_template_body", `Chat-app templates use numbered placeholders {{1}}, {{2}}, …; found {{${name}}}`, {
        variable: name,
      });
    }
    if (!names.includes(name)) names.push(name);
  }
  const leftover = body.replace(PLACEHOLDER, "");
  if (leftover.includes("{{") || leftover.includes("}}")) {
    throw new AppError("invalid_template_body", "Template body has an unclosed {{ or a stray }}", {});
  }
  if (channel === "chatapp") {
    const numbers = names.map(Number).sort((a, b) => a - b);
    numbers.forEach((n, i) => {
      if (n !== i + 1) {
        throw new AppError(
          "invalid_template_body",
          `Chat-app placeholders must run {{1}} to {{${numbers.length}}} without gaps; {{${i + 1}}} is missing`,
          {
            variable: String(i + 1),
          },
        );
      }
    });
    return numbers.map(String);
  }
  return names;
}

export type SuppliedVariables = Record<string, unknown> | unknown[] | null | undefined;

/**
 * Checks supplied values against a template's variables and returns them as strings.
 * SMS: exactly the template's names (case-sensitive), no more, no fewer.
 * Chat-app: as many values as placeholders, none empty or multi-line; an array or {"1": …} object.
 */
export function checkVariables(
  templateId: number,
  variables: string[],
  channel: DeliveryType,
  supplied: SuppliedVariables,
): Record<string, string> {
  let given: Record<string, unknown>;
  if (Array.isArray(supplied)) {
    if (channel !== "chatapp") {
      throw new AppError("invalid_template_variables", "variables must be an object of name → value for SMS templates", {
        template_id: templateId,
      });
    }
    given = Object.fromEntries(supplied.map((v, i) => [String(i + 1), v]));
  } else {
    given = supplied ?? {};
  }

  const keys = Object.keys(given);
  if (channel === "chatapp" && keys.length !== variables.length) {
    throw new AppError(
      "invalid_template_variables",
      `Template ${templateId} declares ${variables.length} parameter(s) but ${keys.length} were supplied`,
      { template_id: templateId, expected: variables.length, supplied: keys.length },
    );
  }
  const missing = variables.filter((v) => !(v in given));
  const unknown = keys.filter((k) => !variables.includes(k));
  if (missing.length > 0 || unknown.length > 0) {
    const parts: string[] = [];
    if (missing.length) parts.push(`missing ${missing.map((m) => `'${m}'`).join(", ")}`);
    if (unknown.length) parts.push(`not in the template: ${unknown.map((m) => `'${m}'`).join(", ")}`);
    throw new AppError(
      "invalid_template_variables",
      `Template ${templateId} variables ${parts.join("; ")} (names are case-sensitive; expected ${variables.map((v) => `'${v}'`).join(", ") || "none"})`,
      { template_id: templateId, missing, unknown, expected: variables },
    );
  }

  const out: Record<string, string> = {};
  for (const name of variables) {
    const value = given[name];
    if (typeof value !== "string" && typeof value !== "number" && typeof value !== "boolean") {
      throw new AppError("invalid_template_variables", `Template variable '${name}' must be a string or a number`, {
        template_id: templateId,
        variable: name,
      });
    }
    const text = String(value);
    if (channel === "chatapp") {
      if (text.trim() === "") {
        throw new AppError("invalid_template_variables", `Chat-app template parameter {{${name}}} must not be empty`, {
          template_id: templateId,
          variable: name,
        });
      }
      if (/[\r\n]/.test(text)) {
        throw new AppError("invalid_template_variables", `Chat-app template parameter {{${name}}} must not contain line breaks`, {
          template_id: templateId,
          variable: name,
        });
      }
    }
    out[name] = text;
  }
  return out;
}

/** Replaces every {{name}} with its value (rule 4). */
export function renderTemplate(body: string, values: Record<string, string>): string {
  return body.replace(PLACEHOLDER, (whole, name: string) => values[name] ?? whole);
}
