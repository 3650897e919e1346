import { access, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isMap, parseDocument } from 'yaml';
import { FabricError } from '../../../domain/errors.ts';
import { parseCommandArgs } from '../args.ts';
import { type CliIo, EXIT } from '../io.ts';
import { initExample } from './init-example.ts';

export const INIT_HELP = `Usage: fabric init [--pack NAME] [--force] [--json]
       fabric init --example compositor [--json]

Writes, in the working directory, a starter config (fabric.yaml) and a custom pack
(NAME.pack.ts; default NAME: units, a unit converter to change into your own), ready to run:

  fabric init
  fabric run --specialist units "Convert 3 km to miles"
  fabric run --specialist rust "…"        # works on the crate in this directory

The pack imports everything from agent-fabric and needs no package.json of its own; on Deno
run the fabric with the package's deno.json (docs/packs.md). Existing files are left alone
unless --force.

With --pack NAME in a directory that already has a fabric.yaml, only the pack is added: NAME.pack.ts
is written and a NAME specialist is added to fabric.yaml, keeping its keys and comments
(refused if fabric.yaml already has that specialist or NAME.pack.ts exists). --force writes both
starter files anew, replacing fabric.yaml.

With --example compositor, writes instead the example the README's walkthroughs use: ./compositor
(a small Wayland compositor crate with an OpenSpec change, add-region-queries) and
./compositor-battery.yaml (a battery of two tasks on it); no config. Refused if either exists.
`;

/** The example pack the package ships; the starter pack is a copy of it. */
const EXAMPLE_PACK = new URL('../../../../packs/example/pack.ts', import.meta.url);

/** `fabric init`: a starter fabric.yaml and custom pack in the working directory. */
export async function initCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandArgs('init', argv, {
    pack: { type: 'string' },
    example: { type: 'string' },
    force: { type: 'boolean' },
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    io.stdout.write(INIT_HELP);
    return EXIT.ok;
  }
  if (positionals.length > 0)
    throw new FabricError('usage', `fabric init takes no arguments (got "${positionals[0]}"). See --help.`);
  if (values.example !== undefined) {
    if (values.pack !== undefined || values.force)
      throw new FabricError(
        'usage',
        '--example writes only the example: it takes neither --pack nor --force.',
      );
    return initExample(io, values.json === true, values.example);
  }
  const name = values.pack ?? 'units';
  if (!/^[a-z][a-z0-9_-]{0,39}$/.test(name)) {
    throw new FabricError(
      'usage',
      `--pack ${JSON.stringify(name)}: a pack name is lower-case letters, digits, - and _, starting with a letter.`,
    );
  }
  const packFile = `${name}.pack.ts`;
  const configPath = join(io.cwd, 'fabric.yaml');
  if (values.pack !== undefined && !values.force && (await exists(configPath)))
    return addPack(io, values.json === true, name, packFile, configPath);
  const files = [
    { path: join(io.cwd, 'fabric.yaml'), text: starterConfig(name, packFile) },
    { path: join(io.cwd, packFile), text: starterPack(await readFile(EXAMPLE_PACK, 'utf8'), name, packFile) },
  ];
  if (!values.force) {
    const existing = [];
    for (const file of files) if (await exists(file.path)) existing.push(file.path);
    if (existing.length > 0) {
      throw new FabricError(
        'usage',
        `${existing.join(' and ')} already exist${existing.length === 1 ? 's' : ''}; nothing was written. ` +
          'Use --force to replace, or run fabric init in another directory.',
      );
    }
  }
  for (const file of files) await writeFile(file.path, file.text);
  if (values.json) {
    io.stdout.write(
      `${JSON.stringify({ config: files[0]?.path, pack: files[1]?.path, specialist: name })}\n`,
    );
    return EXIT.ok;
  }
  io.stdout.write(
    `Wrote fabric.yaml and ${packFile}. Try:\n\n` +
      `  fabric specialists\n  fabric run --specialist ${name} "Convert 3 km to miles"\n\n` +
      `Edit ${packFile} to make the pack your own (docs/packs.md).\n`,
  );
  return EXIT.ok;
}

/** `fabric init --pack NAME` next to an existing fabric.yaml: the pack and its entry, nothing else. */
async function addPack(
  io: CliIo,
  json: boolean,
  name: string,
  packFile: string,
  configPath: string,
): Promise<number> {
  const packPath = join(io.cwd, packFile);
  const source = await readFile(configPath, 'utf8');
  const document = parseDocument(source);
  if (document.errors.length > 0) {
    throw new FabricError(
      'config_invalid',
      `${configPath} is not valid YAML (${document.errors[0]?.message.split('\n')[0]}), so the ${name} pack was not added. ` +
        'Fix the file, or use --force to replace it with a starter config.',
    );
  }
  if (document.hasIn(['specialists', name])) {
    throw new FabricError(
      'usage',
      `${configPath} already has a specialist "${name}"; nothing was written. ` +
        'Pick another name with --pack NAME, or remove that entry first.',
    );
  }
  if (await exists(packPath)) {
    throw new FabricError(
      'usage',
      `${packPath} already exists; nothing was written. Pick another name with --pack NAME, or move the file away.`,
    );
  }
  const specialists = document.get('specialists');
  if (specialists !== undefined && specialists !== null && !isMap(specialists)) {
    throw new FabricError(
      'config_invalid',
      `${configPath}: "specialists" is not a mapping, so the ${name} pack was not added. Fix the file first.`,
    );
  }
  const entry = {
    description: `A custom pack (${packFile}); edit it to make it yours`,
    builder: `./${packFile}#buildPack`,
  };
  let text = insertEntry(source, specialists, name, entry);
  if (text === undefined) {
    // `specialists: {}` would otherwise take the new entry on one line.
    if (isMap(specialists)) specialists.flow = false;
    document.setIn(['specialists', name], document.createNode(entry));
    text = document.toString({ flowCollectionPadding: false, lineWidth: 0 });
  }
  await writeFile(packPath, starterPack(await readFile(EXAMPLE_PACK, 'utf8'), name, packFile));
  await writeFile(configPath, text);
  if (json) {
    io.stdout.write(`${JSON.stringify({ config: configPath, pack: packPath, specialist: name })}\n`);
    return EXIT.ok;
  }
  io.stdout.write(
    `Wrote ${packFile} and added the specialist ${name} to fabric.yaml. Try:\n\n` +
      `  fabric specialists\n  fabric run --specialist ${name} "Convert 3 km to miles"\n\n` +
      `Edit ${packFile} to make the pack your own (docs/packs.md).\n`,
  );
  return EXIT.ok;
}

/**
 * The file with the entry written after the last one of a block `specialists:` mapping, every
 * other byte as it was (the user's layout and comments); undefined when the mapping is not such a
 * block, or the result would not read back as the entry (then the document is re-written).
 */
function insertEntry(
  source: string,
  specialists: unknown,
  name: string,
  entry: { description: string; builder: string },
): string | undefined {
  if (!isMap(specialists) || specialists.flow || specialists.range == null) return undefined;
  const first = specialists.items[0]?.key as { range?: [number, number, number] } | undefined;
  if (first?.range == null) return undefined;
  const indent = first.range[0] - (source.lastIndexOf('\n', first.range[0] - 1) + 1);
  const inner = ' '.repeat(indent + (indent || 2));
  const newline = source.indexOf('\n', specialists.range[1] - 1);
  const at = newline === -1 ? source.length : newline + 1;
  const before = newline === -1 ? `${source}\n` : source.slice(0, at);
  const lines = [
    `${' '.repeat(indent)}${name}:`,
    `${inner}description: ${entry.description}`,
    `${inner}builder: ${entry.builder}`,
  ];
  const text = `${before}${lines.join('\n')}\n${source.slice(at)}`;
  const check = parseDocument(text);
  const added = check.errors.length === 0 ? check.getIn(['specialists', name]) : undefined;
  if (
    !isMap(added) ||
    added.get('description') !== entry.description ||
    added.get('builder') !== entry.builder
  )
    return undefined;
  // Nothing else may read differently: the entry before it, say, must still end where it did.
  const after = check.toJS() as { specialists: Record<string, unknown> };
  delete after.specialists[name];
  return JSON.stringify(after) === JSON.stringify(parseDocument(source).toJS()) ? text : undefined;
}

function starterConfig(name: string, packFile: string): string {
  return `# agent-fabric config, written by \`fabric init\`. Paths are relative to this file.
# Every key: the shipped config/fabric.yaml in the package, and the README.
version: 1
# runs_dir: ./runs           # unset: ./runs in the working directory

llm:
  lm_studio_urls: [http://localhost:1234]   # LM_STUDIO_URL overrides (comma-separated)
  ollama_url: http://localhost:11434        # OLLAMA_HOST overrides
  # backends:                               # llama-server, vLLM, keyed endpoints (docs/backends.md)
  #   - { kind: llama_cpp, url: http://127.0.0.1:8080 }
  #   - { kind: openai, url: https://api.openai.com/v1, api_key_env: OPENAI_API_KEY, models: [gpt-5] }

specialists:
  ${name}:
    description: A custom pack (${packFile}); edit it to make it yours
    builder: ./${packFile}#buildPack

  rust:
    description: Rust compositor engineer in a sandboxed workspace (default the working directory)
    builder: builtin:rust
    sandbox:
      allowed_commands: [cargo check, cargo build, cargo test, cargo clippy, cargo fmt]
      timeout_s: 300

  research:
    description: Web research with cited answers
    builder: builtin:research
    network_allowed: true
`;
}

function starterPack(example: string, name: string, packFile: string): string {
  return example
    .replace(
      'An example custom pack: a units specialist. It is added',
      'A custom pack written by `fabric init`, a unit converter to make your own. It is added',
    )
    .replace(' *     units:\n', ` *     ${name}:\n`)
    .replace('./packs/example/pack.ts#buildPack', `./${packFile}#buildPack`);
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}
