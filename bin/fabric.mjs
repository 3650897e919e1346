#!/usr/bin/env node
// The compiled CLI (`npm run build` writes dist/; the published package ships it). No
// TypeScript loader here: one is loaded only when a config names a custom pack written in
// TypeScript and the runtime cannot strip types itself (Node 20).
try {
  await import('../dist/interfaces/cli/main.js');
} catch (error) {
  // A checkout whose build is missing: say how to make it instead of a module-not-found trace.
  if (
    error?.code === 'ERR_MODULE_NOT_FOUND' &&
    String(error.message).includes('/dist/interfaces/cli/main.js')
  ) {
    process.stderr.write('fabric: the build is missing (dist/). Run `npm run build` and try again.\n');
    process.exit(2);
  }
  throw error;
}
