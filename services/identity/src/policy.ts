// The password policy of NIST SP 800-63B: at least 12 characters (code points, after NFC) and
// not a commonly used password; no composition rules. The list (common-passwords.txt) is the
// 2,700 most used passwords and every one of 12 characters or more of @zxcvbn-ts/language-common
// 4.1.3 (MIT), lower-cased; a password matches it whatever its case.
import { readFileSync } from "node:fs";

export const MIN_PASSWORD_LENGTH = 12;

const COMMON = new Set(
  readFileSync(new URL("./common-passwords.txt", import.meta.url), "utf8")
    .split("\n")
    .filter((l) => l !== ""),
);

/** What is wrong with a password ("must be ..."), or undefined when it may be used. */
export function passwordProblem(password: string): string | undefined {
  const p = password.normalize("NFC");
  if ([...p].length < MIN_PASSWORD_LENGTH) return `must be at least ${MIN_PASSWORD_LENGTH} characters long`;
  if (COMMON.has(p.toLowerCase())) return "must not be a commonly used password";
  return undefined;
}
