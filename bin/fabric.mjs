#!/usr/bin/env node
// The compiled CLI (`npm run build` writes dist/; the published package ships it). No
// TypeScript loader here: one is loaded only when a config names a custom pack written in
// TypeScript and the runtime cannot strip types itself (Node 20).
await import('../dist/interfaces/cli/main.js');
