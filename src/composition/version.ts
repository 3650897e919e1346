import { readFileSync } from 'node:fs';

// Read at run time rather than imported: the build's rootDir is src/, and package.json sits at
// the same distance from src/interfaces/ and dist/interfaces/.
const packageJson = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

/** The fabric's version, from package.json. */
export const FABRIC_VERSION: string = packageJson.version;
