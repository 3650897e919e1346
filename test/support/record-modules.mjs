// Preloaded with `node --import` by the tests: records every module specifier the process
// resolves to the file in FABRIC_TEST_MODULES_FILE, so a test can tell what a command loaded.
import { register } from 'node:module';

register('./record-modules-hooks.mjs', import.meta.url, {
  data: { file: process.env.FABRIC_TEST_MODULES_FILE },
});
