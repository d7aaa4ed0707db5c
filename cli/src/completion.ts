// Shell completion from the same commands: every kind, its verbs, and each verb's flags.
import type { Command } from "commander";
import { CliError } from "./client.ts";

/** word -> the words that may follow it ("bridge" -> "list get ...", "bridge create" -> flags). */
function tree(p: Command): Map<string, string[]> {
  const out = new Map<string, string[]>([["", p.commands.map((c) => c.name())]]);
  for (const c of p.commands) {
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
  COMPREPLY=( $(compgen -W "$words" -- "$cur") )
}
complete -F _vnm vnm
`;
  if (shell === "bash") return bash;
  if (shell === "zsh") return `autoload -U +X bashcompinit && bashcompinit\n${bash}`;
  throw new CliError(`no completion for ${shell}: bash or zsh`, 2);
}
