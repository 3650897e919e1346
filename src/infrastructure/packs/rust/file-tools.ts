import * as v from 'valibot';
import type { Tool } from '../../../application/ports.ts';
import type { PathScope } from '../../sandbox/path-scope.ts';
import { editWorkspaceFile, readWorkspaceFile, writeWorkspaceFile } from '../../sandbox/workspace-files.ts';
import { listWorkspace, searchWorkspace } from '../../sandbox/workspace-search.ts';
import { defineTool } from '../define-tool.ts';

const workspacePath = v.pipe(v.string(), v.description('A path relative to the workspace root.'));

/** The file tools of SPEC §4.1, confined to the workspace by `scope`. */
export function fileTools(scope: PathScope): Tool[] {
  return [
    defineTool({
      name: 'list_files',
      description:
        'List a folder of the workspace recursively (a few levels deep). Links are shown, not followed; target/ and .git/ are not entered.',
      input: v.object({ path: v.optional(workspacePath, '.') }),
      run: async (args) => listWorkspace(scope, args.path),
    }),
    defineTool({
      name: 'read_file',
      description: 'Return the text of a workspace file (up to 256 KiB). Read a file before you edit it.',
      input: v.object({ path: workspacePath }),
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
      input: v.object({ path: workspacePath, content: v.string() }),
      run: async (args) => {
        const bytes = await writeWorkspaceFile(scope, args.path, args.content);
        return `Wrote ${args.path} (${bytes} bytes). Run cargo_check next.`;
      },
    }),
    defineTool({
      name: 'edit_file',
      description:
        'Replace exactly one occurrence of old_text with new_text in a workspace file. old_text must match exactly once, whitespace included.',
      input: v.object({ path: workspacePath, old_text: v.string(), new_text: v.string() }),
      run: async (args) => {
        await editWorkspaceFile(scope, args.path, args.old_text, args.new_text);
        return `Edited ${args.path}. Run cargo_check next.`;
      },
    }),
    defineTool({
      name: 'search',
      description:
        'Search the workspace (or one folder or file of it) for a regular expression or plain text; answers file:line:text.',
      input: v.object({ pattern: v.string(), path: v.optional(workspacePath, '.') }),
      run: async (args) => searchWorkspace(scope, args.pattern, args.path),
    }),
  ];
}
