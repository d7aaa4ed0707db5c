// The password policy of NIST SP 800-63B: at least 12 characters (code points, after NFC) and
// not a commonly used password; no composition rules. Common passwords are the maintained list
// of @zxcvbn-ts/language-common (its "passwords-common" dictionary, drawn from breach corpora),
// whatever the case; a password made of two of them ("password" + "123456") is as common.
import { dictionary } from "@zxcvbn-ts/language-common";

export const MIN_PASSWORD_LENGTH = 12;

const COMMON = new Set((dictionary["passwords-common"] as string[]).map((p) => p.toLowerCase()));

/** Whether `p` (lower-cased) is a common password, or two of them one after the other. */
function isCommon(p: string): boolean {
  if (COMMON.has(p)) return true;
  for (let i = 1; i < p.length; i++) if (COMMON.has(p.slice(0, i)) && COMMON.has(p.slice(i))) return true;
  return false;
}

/** What is wrong with a password ("must be ..."), or undefined when it may be used. */
export function passwordProblem(password: string): string | undefined {
  const p = password.normalize("NFC");
  if ([...p].length < MIN_PASSWORD_LENGTH) return `must be at least ${MIN_PASSWORD_LENGTH} characters long`;
  if (isCommon(p.toLowerCase())) return "must not be a commonly used password";
  return undefined;
}
