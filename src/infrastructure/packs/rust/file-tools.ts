import * as v from 'valibot';
import type { Tool } from '../../../application/ports.ts';
import type { PathScope } from '../../sandbox/path-scope.ts';
import {
  editApplied,
  editWorkspaceFile,
  readWorkspaceFile,
  writeWorkspaceFile,
} from '../../sandbox/workspace-files.ts';
import { listWorkspace, searchWorkspace } from '../../sandbox/workspace-search.ts';
import { defineTool } from '../define-tool.ts';
import { unifiedDiff } from '../../../domain/unified-diff.ts';

const workspacePath = v.pipe(v.string(), v.description('A path relative to the workspace root.'));
/**
 * Text that goes into a file as it is: `contentMediaType` declares it file content, so a call
 * whose text arrives with literal `\n` instead of line breaks is refused, not written
 * (research/local-model-quirks-2.md Q4, docs/packs.md).
 */
const fileText = v.pipe(v.string(), v.metadata({ contentMediaType: 'text/plain' }));

/** The file tools of SPEC §4.1, confined to the workspace by `scope`. */
export function fileTools(scope: PathScope): Tool[] {
  return [
    defineTool({
      name: 'list_files',
      description:
        'List a folder of the workspace recursively (a few levels deep). Links are shown, not followed; target/ and .git/ are not entered.',
      input: v.object({ path: v.optional(workspacePath, '.') }),
      effect: 'read',
      run: async (args) => listWorkspace(scope, args.path),
    }),
    defineTool({
      name: 'read_file',
      description: 'Return the text of a workspace file (up to 256 KiB). Read a file before you edit it.',
      input: v.object({ path: workspacePath }),
      effect: 'read',
      run: async (args) => {
        const file = await readWorkspaceFile(scope, args.path);
        if (file.kind === 'binary')
          return `${args.path} is a binary file (${file.bytes} bytes); its content is not shown.`;
        return file.text;
      },
    }),
    defineTool({
      name: 'write_file',
      description:
        'Create or replace a workspace file with the given content, creating parent folders. Prefer edit_file for changes to existing files.',
      input: v.object({ path: workspacePath, content: fileText }),
      // A whole file: written twice, it is the same file.
      effect: 'idempotent',
      run: async (args) => {
        const before = await previousText(scope, args.path);
        const bytes = await writeWorkspaceFile(scope, args.path, args.content);
        const text = `Wrote ${args.path} (${bytes} bytes). Run cargo_check next.`;
        if (before === undefined) return text;
        return { text, diff: unifiedDiff(args.path, before, args.content) };
      },
    }),
    defineTool({
      name: 'edit_file',
      description:
        'Replace exactly one occurrence of old_text with new_text in a workspace file. old_text must match exactly once, whitespace included.',
      input: v.object({ path: workspacePath, old_text: v.string(), new_text: fileText }),
      effect: 'transform',
      checkApplied: (args) => editApplied(scope, args.path, args.old_text, args.new_text),
      run: async (args) => {
        const { before, after } = await editWorkspaceFile(scope, args.path, args.old_text, args.new_text);
        return {
          text: `Edited ${args.path}. Run cargo_check next.`,
          diff: unifiedDiff(args.path, before, after),
        };
      },
    }),
    defineTool({
      name: 'search',
      description:
        'Search the workspace (or one folder or file of it) for a regular expression or plain text; answers file:line:text.',
      input: v.object({ pattern: v.string(), path: v.optional(workspacePath, '.') }),
      effect: 'read',
      run: async (args) => searchWorkspace(scope, args.pattern, args.path),
    }),
  ];
}

/**
 * The text a write is about to replace: null when the file does not exist yet, undefined when it
 * cannot be diffed (binary, too large, or refused: the write itself then says why).
 */
async function previousText(scope: PathScope, requested: string): Promise<string | null | undefined> {
  try {
    if ((await scope.forWrite(requested)).missing.length > 0) return null;
    const file = await readWorkspaceFile(scope, requested);
    return file.kind === 'text' ? file.text : undefined;
  } catch {
    return undefined;
  }
}
