import { describe, expect, it } from 'vitest';
import { runFabricInProcess } from '../../support/fabric-cli.ts';

describe('fabric mcp --help', () => {
  it('explains how to add the installed fabric to an MCP client, not through npx', async () => {
    const result = await runFabricInProcess(['mcp', '--help'], { env: {}, cwd: process.cwd() });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toMatch(/Usage: fabric mcp/);
    const snippet = result.stdout.slice(result.stdout.indexOf('{'), result.stdout.lastIndexOf('}') + 1);
    expect(JSON.parse(snippet)).toMatchObject({
      mcpServers: {
        // `npx fabric` outside a project that installed agent-fabric fetches an unrelated package.
        'agent-fabric': { command: 'fabric', args: ['mcp', '--config', expect.any(String)] },
      },
    });
  });

  it('is listed by fabric --help', async () => {
    const result = await runFabricInProcess(['--help'], { env: {}, cwd: process.cwd() });
    expect(result.stdout).toMatch(/^\s+mcp\s+serve the fabric as an MCP server/m);
  });

  it('refuses an unknown flag with a usage error', async () => {
    const result = await runFabricInProcess(['mcp', '--bogus'], { env: {}, cwd: process.cwd() });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(/fabric mcp --help/);
  });
});
