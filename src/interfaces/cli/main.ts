/**
 * The `fabric` entry point on Node and on Deno. The only runtime-specific code of the CLI is
 * here: arguments, signals and the exit code.
 */
import { Buffer } from 'node:buffer';
import process from 'node:process';
import { readEnvironment } from '../../config/env.ts';
import { runCli } from './cli.ts';
import { closableOutput } from './closable-output.ts';
import { processTerminal } from './terminal.ts';

const controller = new AbortController();
let interrupts = 0;
process.on('SIGINT', () => {
  interrupts += 1;
  if (interrupts > 1) process.exit(130);
  process.stderr.write('\nCancelling… (Ctrl-C again to quit at once)\n');
  controller.abort(new Error('cancelled by SIGINT'));
});
process.on('SIGTERM', () => controller.abort(new Error('cancelled by SIGTERM')));

const code = await runCli(process.argv.slice(2), {
  // A closed pipe stops the output, never the run.
  stdout: closableOutput(process.stdout),
  stderr: closableOutput(process.stderr),
  env: readEnvironment(),
  cwd: process.cwd(),
  signal: controller.signal,
  // Ctrl-C at a prompt in raw mode is a key, not a signal: it cancels the run the same way.
  terminal: processTerminal(() => {
    process.stderr.write('\nCancelling…\n');
    controller.abort(new Error('cancelled by Ctrl-C at a prompt'));
  }),
  readStdin: async () => {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(Buffer.from(chunk as Uint8Array));
    return Buffer.concat(chunks).toString('utf8');
  },
});
process.exitCode = code;
// Open handles (an MCP client, a pending socket) must not keep a finished CLI alive.
setTimeout(() => process.exit(code), 200).unref();
