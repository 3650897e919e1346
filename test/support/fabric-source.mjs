// The CLI from the TypeScript sources, for the tests (bin/fabric.mjs runs the build): tsx
// compiles them on the fly on Node 20.
import { register } from 'tsx/esm/api';

register();
await import('../../src/interfaces/cli/main.ts');
