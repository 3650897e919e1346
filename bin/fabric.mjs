#!/usr/bin/env node
// Node 20 cannot run TypeScript by itself: tsx compiles the sources on the fly (and custom packs
// written in TypeScript with them). Deno runs src/interfaces/cli/main.ts directly.
import { register } from 'tsx/esm/api';

register();
await import('../src/interfaces/cli/main.ts');
