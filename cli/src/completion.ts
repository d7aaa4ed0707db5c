// Shell completion from the same commands: every kind, its verbs, each verb's flags, and, for
// the item of get/describe/update/delete, the ids and names of that kind at the gateway in use
// (`vnm __complete <kind> [--parent value...]` prints them).
import type { Command } from "commander";
import type { Api } from "./client.ts";
import { usage } from "./errors.ts";
import { kindNamed, optionOf } from "./kinds.ts";
import { listItems } from "./resolve.ts";
import { clean } from "./text.ts";

/** word -> the words that may follow it ("bridge" -> "list get ...", "bridge create" -> flags). */
function tree(p: Command): Map<string, string[]> {
  const visible = p.commands.filter((c) => !c.name().startsWith("__"));
  const out = new Map<string, string[]>([["", visible.map((c) => c.name())]]);
  for (const c of visible) {
    out.set(c.name(), c.commands.map((v) => v.name()));
    for (const v of c.commands) out.set(`${c.name()} ${v.name()}`, v.options.map((o) => o.long!).filter(Boolean));
  }
  return out;
}

export function completion(p: Command, shell: string): string {
  const cases = [...tree(p)].map(([k, words]) => `    "${k}") words="${words.join(" ")}" ;;`).join("\n");
  const bash = `# vnm completion: eval "$(vnm completion ${shell})"
_vnm() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" key="" i
  for ((i = 1; i < COMP_CWORD && i < 3; i++)); do
    [[ "\${COMP_WORDS[i]}" == -* ]] && break
    key="\${key:+$key }\${COMP_WORDS[i]}"
  done
  local words=""
  case "$key" in
${cases}
  esac
  # The item of get, describe, update and delete: the ids and names the gateway has.
  if [[ $COMP_CWORD -ge 3 && "$cur" != -* && "\${COMP_WORDS[COMP_CWORD-1]}" != --* ]]; then
    case "\${COMP_WORDS[2]}" in
      get|describe|update|delete) words="$(vnm __complete "\${COMP_WORDS[@]:1:COMP_CWORD-1}" 2>/dev/null)" ;;
    esac
  fi
  COMPREPLY=( $(compgen -W "$words" -- "$cur") )
}
complete -F _vnm vnm
`;
  if (shell === "bash") return bash;
  if (shell === "zsh") return `autoload -U +X bashcompinit && bashcompinit\n${bash}`;
  throw usage(`no completion for ${shell}: bash or zsh`);
}

/** The keys and names of a kind's items (under the parents the words give), one per line. */
export async function completeItems(api: Api, words: string[]): Promise<string> {
  const kind = kindNamed(words[0] ?? "");
  if (!kind?.list) return "";
  const values: Record<string, string> = {};
  for (let i = 2; i < words.length - 1; i++) {
    const parent = kind.parents(kind.list).find((v) => words[i] === `--${optionOf(v)}`);
    if (parent) values[parent] = words[i + 1]!;
  }
  const tenantAt = words.indexOf("--tenant");
  const items = await listItems(api, kind, values, tenantAt > 0 ? words[tenantAt + 1] : undefined);
  // Words without control characters or blanks only: the shell splits the list on blanks, and a
  // name that printing would change could not be typed back.
  const names = items.flatMap((i) => [kind.keyOf(i), typeof i["name"] === "string" ? i["name"] : ""]);
  return [...new Set(names.filter((w) => w && w === clean(w) && !/\s/.test(w)))].join("\n");
}
