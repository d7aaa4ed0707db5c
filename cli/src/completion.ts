// Shell completion from the same commands: every kind, its verbs, each verb's flags, and, for
// the item of get/describe/update/delete, the ids and names of that kind at the gateway in use
// (`vnm __complete <kind> [--parent value...]` prints them, one a line).
//
// An item's name is the tenant's to choose (a VTEP's is the device's), so it is data from end to
// end and never shell code: each script reads those lines into an array (bash mapfile, zsh's (f)
// flag, fish's command substitution), matches them against the word typed as a literal, and
// hands them to the shell as words: bash quotes each with printf %q (or for the quote the word
// is open in), zsh's compadd and fish's complete quote what they insert. Nothing there passes
// through compgen -W, eval or any other expansion. Names that would not read back the same
// (a line break, a control character, a blank other than a space) and names that a command
// would take for an option (a leading "-") are not offered.
import type { Command } from "commander";
import type { Api } from "./client.ts";
import { usage } from "./errors.ts";
import { allKinds, kindNamed, optionOf } from "./kinds.ts";
import { listItems, resolveParents } from "./resolve.ts";
import { clean } from "./text.ts";

export const SHELLS = ["bash", "zsh", "fish"] as const;

/** word -> the words that may follow it ("bridge" -> "list get ...", "bridge create" -> flags). */
function tree(p: Command): Map<string, string[]> {
  const visible = p.commands.filter((c) => !c.name().startsWith("__"));
  const out = new Map<string, string[]>([["", visible.map((c) => c.name())]]);
  for (const c of visible) {
    // A kind's plural and short name complete as the kind does (not offered as words themselves).
    for (const name of [c.name(), ...c.aliases()]) {
      out.set(name, c.commands.map((v) => v.name()));
      for (const v of c.commands) out.set(`${name} ${v.name()}`, v.options.map((o) => o.long!).filter(Boolean));
    }
  }
  return out;
}

/** The verbs whose next word is an item: get, describe, update, delete, and the kinds' actions (link, unlink). */
function itemVerbs(): string[] {
  const actions = allKinds().flatMap((k) => k.actions.map((a) => (a.method === "POST" ? a.word : `un${a.word}`)));
  // Only plain words go into the scripts' patterns.
  return [...new Set(["get", "describe", "update", "delete", ...actions])].filter((w) => /^[a-z][a-z_]*$/.test(w));
}

/** A word single-quoted for any of the three shells (the commands' own words, quoted all the same). */
const quoted = (w: string) => `'${w.replaceAll("'", `'\\''`)}'`;
const fishQuoted = (w: string) => `'${w.replaceAll("\\", "\\\\").replaceAll("'", "\\'")}'`;

function bash(cases: Map<string, string[]>): string {
  const arms = [...cases].map(([k, words]) => `    ${quoted(k)}) words=(${words.map(quoted).join(" ")}) ;;`).join("\n");
  return `# vnm completion: eval "$(vnm completion bash)"
_vnm() {
  local key="" i w c
  for ((i = 1; i < COMP_CWORD && i < 3; i++)); do
    [[ "\${COMP_WORDS[i]}" == -* ]] && break
    key="\${key:+$key }\${COMP_WORDS[i]}"
  done
  local -a words=()
  case "$key" in
${arms}
  esac
  # The word as typed (readline's: after an opening quote, the text after it), and the quote it
  # is open in, if any.
  local raw="\${2-\${COMP_WORDS[COMP_CWORD]}}" q="" cur=""
  local before="\${COMP_LINE:0:COMP_POINT-\${#raw}}"
  case "\${before: -1}" in "'" | '"') q="\${before: -1}" ;; esac
  # The item of get, describe, update and delete: the ids and names the gateway has, one a line,
  # read as data (never expanded); none that a command would take for an option.
  if [[ $COMP_CWORD -ge 3 && -z $q && "$raw" != -* && "\${COMP_WORDS[COMP_CWORD-1]}" != --* ]] ||
    [[ $COMP_CWORD -ge 3 && -n $q && "\${COMP_WORDS[COMP_CWORD-1]}" != --* ]]; then
    case "\${COMP_WORDS[2]}" in
      ${itemVerbs().join(" | ")})
        local -a items=()
        mapfile -t items < <(vnm __complete "\${COMP_WORDS[@]:1:COMP_CWORD-1}" 2>/dev/null)
        words=()
        for w in "\${items[@]}"; do [[ -n $w && $w != -* ]] && words+=("$w"); done
        ;;
    esac
  fi
  # What the shell will read the typed word as: in single quotes, itself; in double quotes, a
  # backslash escapes \\ " $ and \`; outside quotes, it escapes any character.
  if [[ $q == "'" ]]; then
    cur=$raw
  else
    for ((i = 0; i < \${#raw}; i++)); do
      c="\${raw:i:1}"
      if [[ $c == "\\\\" && ( -z $q || "\${raw:i+1:1}" == ["\\\\\\"\\$\\\`"] ) ]]; then
        ((i++))
        c="\${raw:i:1}"
      fi
      cur+=$c
    done
  fi
  # Every word that starts with it, quoted as the line needs it (in quotes, closed: readline
  # does not close them for a function's words).
  COMPREPLY=()
  for w in "\${words[@]}"; do
    [[ $w == "$cur"* ]] || continue
    case "$q" in
      "'") w="\${w//"'"/"'\\\\''"}" ;;
      '"') w="\${w//"\\\\"/"\\\\\\\\"}" w="\${w//'"'/'\\"'}" w="\${w//'$'/'\\$'}" w="\${w//'\`'/'\\\`'}" ;;
      *) printf -v w %q "$w" ;;
    esac
    COMPREPLY+=("$w$q")
  done
}
complete -F _vnm vnm
`;
}

function zsh(cases: Map<string, string[]>): string {
  const arms = [...cases].map(([k, words]) => `    (${quoted(k)}) cands=(${words.map(quoted).join(" ")}) ;;`).join("\n");
  return `#compdef vnm
# vnm completion: eval "$(vnm completion zsh)" (compinit is loaded if it is not yet)
_vnm() {
  emulate -L zsh
  local key="" i
  for ((i = 2; i < CURRENT && i < 4; i++)); do
    [[ $words[i] == -* ]] && break
    key="\${key:+$key }$words[i]"
  done
  local -a cands
  case "$key" in
${arms}
  esac
  # The item of get, describe, update and delete: the ids and names the gateway has, one a line,
  # read as data; none that a command would take for an option. compadd matches and quotes them.
  if (( CURRENT >= 4 )) && [[ $PREFIX != -* && $words[CURRENT-1] != --* ]]; then
    case "$words[3]" in
      (${itemVerbs().join("|")})
        cands=("\${(@f)$(vnm __complete "\${(@)words[2,CURRENT-1]}" 2>/dev/null)}")
        cands=("\${(@)cands:#-*}")
        cands=("\${(@)cands:#}")
        ;;
    esac
  fi
  compadd -a cands
}
if (( ! $+functions[compdef] )); then autoload -Uz compinit && compinit; fi
compdef _vnm vnm
`;
}

function fish(cases: Map<string, string[]>): string {
  const arms = [...cases].map(([k, words]) => `        case ${fishQuoted(k)}\n            set cands ${words.map(fishQuoted).join(" ")}`).join("\n");
  return `# vnm completion: vnm completion fish | source
function __vnm_complete
    set -l words (commandline -opc)
    set -l key
    for w in $words[2..3]
        string match -q -- '-*' $w; and break
        set -a key $w
    end
    set -l cands
    switch (string join ' ' -- $key)
${arms}
    end
    # The item of get, describe, update and delete: the ids and names the gateway has, one a
    # line, as data; none that a command would take for an option. complete matches and quotes them.
    if test (count $words) -ge 3; and not string match -q -- '-*' (commandline -ct); and not string match -q -- '--*' $words[-1]
        switch $words[3]
            case ${itemVerbs().join(" ")}
                set cands (vnm __complete $words[2..-1] 2>/dev/null | string match -v -- '-*' | string match -v -- '')
        end
    end
    string join \\n -- $cands
end
complete -c vnm -f -a '(__vnm_complete)'
`;
}

export function completion(p: Command, shell: string): string {
  const cases = tree(p);
  if (shell === "bash") return bash(cases);
  if (shell === "zsh") return zsh(cases);
  if (shell === "fish") return fish(cases);
  throw usage(`no completion for ${shell}: ${SHELLS.join(", ")}`);
}

/**
 * The keys and names of a kind's items (under the parents the words give), one per line: those
 * that read back the same (no line break, control character or blank but a space) and that no
 * command would take for an option (no leading "-").
 */
export async function completeItems(api: Api, words: string[]): Promise<string> {
  const kind = kindNamed(words[0] ?? "");
  if (!kind?.list) return "";
  const values: Record<string, string> = {};
  for (let i = 2; i < words.length - 1; i++) {
    const parent = kind.parents(kind.list).find((v) => words[i] === `--${optionOf(v)}`);
    if (parent) values[parent] = words[i + 1]!;
  }
  const tenantAt = words.indexOf("--tenant");
  const tenant = tenantAt > 0 ? words[tenantAt + 1] : undefined;
  // Parents typed by name (--bridge web) are looked up as the command will.
  const items = await listItems(api, kind, await resolveParents(api, kind.list.template, values, tenant), tenant);
  const names = items.flatMap((i) => [kind.keyOf(i), typeof i["name"] === "string" ? i["name"] : ""]);
  return [...new Set(names.filter((w) => w && w === clean(w) && !/[^\S ]/.test(w) && !w.startsWith("-")))].join("\n");
}
