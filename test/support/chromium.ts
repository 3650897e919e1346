import { existsSync } from 'node:fs';
import { type BrowserContext, chromium } from 'playwright-core';

/** Debian's chromium package; `.ci/run` installs it (Playwright's own download cannot work here). */
export const CHROMIUM = '/usr/bin/chromium';

/** True when the browser is not installed: the browser tests are skipped with a warning. */
export const chromiumMissing = !existsSync(CHROMIUM);

/**
 * Headless Chromium on a fresh profile, with the flags this closed network needs: without the
 * background-networking ones its connections are refused many at a time.
 */
export function launchChromium(profile: string): Promise<BrowserContext> {
  return chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
