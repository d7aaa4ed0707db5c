// The password policy of NIST SP 800-63B: at least 12 characters (code points, after NFC), not a
// commonly used password, and not easy to guess; no composition rules. Common passwords are the
// maintained list of @zxcvbn-ts/language-common (its "passwords-common" dictionary, drawn from
// breach corpora), whatever the case; a password made of two of them ("password" + "123456") is
// as common. How easy a password is to guess is zxcvbn's estimate (@zxcvbn-ts/core, with the
// common and English dictionaries), told the user's own data: its name, its tenant's name and
// this product's names: it must reach score 3 of 4, about 10^8 guesses or more. zxcvbn takes a
// repeat of the user's own word for a repeat of random characters, so what is left once the
// user's name and tenant's name are taken out must reach score 2 on its own (10^6 guesses). So
// "aaaaaaaaaaaa", a user's name twice or a tenant's name thrice are refused. The estimate
// reads a password's first 64 characters, with at most 8 look-alike substitutions ("p@ssw0rd"):
// beyond those its cost grows fast (seconds for a crafted 1,024-character password), within them
// it stays under 50 ms.
import { type OptionsType, ZxcvbnFactory } from "@zxcvbn-ts/core";
import { adjacencyGraphs, dictionary } from "@zxcvbn-ts/language-common";
import { dictionary as english, translations } from "@zxcvbn-ts/language-en";

export const MIN_PASSWORD_LENGTH = 12;
/** zxcvbn's score a password must reach (0 to 4; 3: about 10^8 guesses or more). */
export const MIN_PASSWORD_SCORE = 3;
/** The score of what is left without the user's own words (2: about 10^6 guesses or more). */
const MIN_REST_SCORE = 2;
/** Words every user of this product shares, so none of them makes a password harder to guess. */
const PRODUCT_WORDS = ["vnm", "midonet", "admin", "tenant"];

const COMMON = new Set(dictionary["passwords-common"].map((p) => p.toLowerCase()));

const options: OptionsType = {
  maxLength: 64,
  l33tMaxSubstitutions: 8,
  graphs: adjacencyGraphs,
  dictionary: { ...dictionary, ...english },
  translations: { ...translations, warnings: { ...translations.warnings, userInputs: "It contains the user's name, its tenant's name or this product's name." } },
};
const zxcvbn = new ZxcvbnFactory(options);

/** Whether `p` (lower-cased) is a common password, or two of them one after the other. */
function isCommon(p: string): boolean {
  if (COMMON.has(p)) return true;
  for (let i = 1; i < p.length; i++) if (COMMON.has(p.slice(0, i)) && COMMON.has(p.slice(i))) return true;
  return false;
}

/** The user's own words: each input whole and its parts between punctuation ("ann.lee" → "ann", "lee"), longest first. */
function ownWords(userInputs: readonly (string | null | undefined)[]): string[] {
  const words = new Set<string>();
  for (const input of userInputs) {
    if (!input) continue;
    const whole = input.normalize("NFC").toLowerCase();
    words.add(whole);
    for (const part of whole.split(/[^\p{L}\p{N}]+/u)) if (part.length >= 3) words.add(part);
  }
  return [...words].sort((a, b) => b.length - a.length);
}

/** `p` without any of `words` (whatever the case). */
function without(p: string, words: readonly string[]): string {
  let rest = p;
  for (const w of words) rest = rest.replace(new RegExp(w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "giu"), "");
  return rest;
}

const EASY = "It is made of common words, names or patterns.";

/**
 * What is wrong with a password ("must be ..."), or undefined when it may be used. `userInputs`:
 * the user's own data (its name, its tenant's name), which make a password no harder to guess.
 */
export function passwordProblem(password: string, userInputs: readonly (string | null | undefined)[] = []): string | undefined {
  const p = password.normalize("NFC");
  if ([...p].length < MIN_PASSWORD_LENGTH) return `must be at least ${MIN_PASSWORD_LENGTH} characters long`;
  if (isCommon(p.toLowerCase())) return "must not be a commonly used password";
  const own = ownWords(userInputs);
  const estimate = zxcvbn.check(p, [...own, ...PRODUCT_WORDS]);
  if (estimate.score < MIN_PASSWORD_SCORE) {
    const hint = estimate.feedback.suggestions[0] ?? "Add more words that are less common.";
    return `must be harder to guess: ${estimate.feedback.warning ?? EASY} ${hint}`;
  }
  const rest = without(p, own);
  if (rest !== p && zxcvbn.check(rest, PRODUCT_WORDS).score < MIN_REST_SCORE) {
    return "must be harder to guess: without the user's name and its tenant's name, what is left is easy to guess. Add more words that are less common.";
  }
  return undefined;
}
