import packageJson from '../../package.json' with { type: 'json' };

/** The fabric's version, from package.json. */
export const FABRIC_VERSION: string = packageJson.version;
