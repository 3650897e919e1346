import { FabricError } from '../../../domain/errors.ts';
import { type CliIo, EXIT } from '../io.ts';

export const COMPLETION_HELP = `Usage: fabric completion bash|zsh|fish

Prints a shell completion script for fabric: commands, their flags, and specialist names after
--specialist (asked of \`fabric specialists --json\` as you type). Install it with:

  bash:  fabric completion bash > ~/.local/share/bash-completion/completions/fabric
  zsh:   fabric completion zsh > "\${fpath[1]}/_fabric"        (then: compinit)
  fish:  fabric completion fish > ~/.config/fish/completions/fabric.fish
`;

/** Flags worth completing, per command; `--help` everywhere. */
const FLAGS: Readonly<Record<string, readonly string[]>> = {
  run: [
    '--specialist',
    '--workspace',
    '--model',
    '--task-file',
    '--max-steps',
    '--config',
    '--json',
    '--events',
    '--show-reasoning',
  ],
  replay: ['--execute', '--workspace', '--keep', '--repo', '--json', '--config'],
  resume: ['--max-steps', '--force', '--repo', '--json', '--config'],
  runs: ['--repo', '--json', '--config'],
  specialists: ['--json', '--config'],
  models: ['--specialist', '--json', '--config'],
  policy: ['--specialist', '--tool', '--path', '--json', '--config'],
  health: ['--json', '--config'],
  control: ['--out', '--json', '--config'],
  mcp: ['--config'],
  serve: ['--host', '--port', '--config'],
  demo: ['--serve', '--port'],
  init: ['--pack', '--example', '--force', '--json'],
  daemon: ['--repo', '--change', '--once', '--interval', '--max-attempts', '--model', '--json', '--config'],
  battery: ['--models', '--concurrency', '--resume', '--json', '--report', '--config'],
  completion: [],
};

const SUBCOMMANDS: Readonly<Record<string, readonly string[]>> = {
  health: ['lm'],
  runs: ['list', 'show'],
  control: ['migrate', 'sync', 'export'],
  daemon: ['status'],
  policy: ['check'],
  completion: ['bash', 'zsh', 'fish'],
};

// Specialist names from the config in effect; plain grep and sed, so no jq is needed.
const SPECIALISTS = `fabric specialists --json 2>/dev/null | grep -o '"name":"[^"]*"' | sed 's/"name":"//; s/"$//'`;

/** `fabric completion SHELL`: the completion script on stdout. */
export async function completionCommand(
  argv: readonly string[],
  io: CliIo,
  commands: readonly string[],
): Promise<number> {
  const [shell, ...rest] = argv;
  if (shell === '--help' || shell === '-h') {
    io.stdout.write(COMPLETION_HELP);
    return EXIT.ok;
  }
  if (rest.length > 0 || (shell !== 'bash' && shell !== 'zsh' && shell !== 'fish')) {
    throw new FabricError('usage', `fabric completion takes one of bash, zsh, fish.\n\n${COMPLETION_HELP}`);
  }
  const script = { bash: bashScript, zsh: zshScript, fish: fishScript }[shell];
  io.stdout.write(script(commands));
  return EXIT.ok;
}

function wordsAfter(command: string): string {
  return [...(SUBCOMMANDS[command] ?? []), ...(FLAGS[command] ?? []), '--help'].join(' ');
}

function bashScript(commands: readonly string[]): string {
  const cases = commands.map((command) => `    ${command}) words="${wordsAfter(command)}" ;;`).join('\n');
  return `# fabric completion for bash: \`fabric completion bash\`.
_fabric() {
  local cur prev words command
  cur="\${COMP_WORDS[COMP_CWORD]}"
  prev="\${COMP_WORDS[COMP_CWORD-1]}"
  command="\${COMP_WORDS[1]}"
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "${commands.join(' ')} --help --version" -- "$cur"))
    return
  fi
  case "$prev" in
    --specialist|-s) COMPREPLY=($(compgen -W "$(${SPECIALISTS})" -- "$cur")); return ;;
    --events) COMPREPLY=($(compgen -W "jsonl" -- "$cur")); return ;;
    --config|-c|--workspace|-w|--repo|--out|--report) COMPREPLY=($(compgen -f -- "$cur")); return ;;
  esac
  case "$command" in
${cases}
    *) words="--help" ;;
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
}
complete -o default -F _fabric fabric
`;
}

function zshScript(commands: readonly string[]): string {
  const cases = commands.map((command) => `    ${command}) words=(${wordsAfter(command)}) ;;`).join('\n');
  return `#compdef fabric
# fabric completion for zsh: \`fabric completion zsh\`.
_fabric() {
  local -a words
  if (( CURRENT == 2 )); then
    words=(${commands.join(' ')} --help --version)
    compadd -a words
    return
  fi
  case "\${words[CURRENT-1]}" in
    --specialist|-s) compadd -- \${(f)"$(${SPECIALISTS})"}; return ;;
    --events) compadd jsonl; return ;;
    --config|-c|--workspace|-w|--repo|--out|--report) _files; return ;;
  esac
  case "\${words[2]}" in
${cases}
    *) words=(--help) ;;
  esac
  compadd -a words
  _files
}
compdef _fabric fabric
`;
}

function fishScript(commands: readonly string[]): string {
  const lines = [
    '# fabric completion for fish: `fabric completion fish`.',
    'complete -c fabric -f',
    `complete -c fabric -n __fish_use_subcommand -a '${commands.join(' ')}'`,
  ];
  for (const command of commands) {
    const after = `__fish_seen_subcommand_from ${command}`;
    const subcommands = SUBCOMMANDS[command] ?? [];
    if (subcommands.length > 0) lines.push(`complete -c fabric -n '${after}' -a '${subcommands.join(' ')}'`);
    for (const flag of [...(FLAGS[command] ?? []), '--help'])
      lines.push(`complete -c fabric -n '${after}' -l ${flag.slice(2)}`);
  }
  lines.push(
    `complete -c fabric -n '__fish_seen_subcommand_from run models' -l specialist -x -a '(${SPECIALISTS})'`,
  );
  lines.push(`complete -c fabric -n '__fish_seen_subcommand_from run' -l events -x -a jsonl`);
  return `${lines.join('\n')}\n`;
}
