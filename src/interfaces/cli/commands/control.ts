import { mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import { loadConfig } from '../../../config/load.ts';
import { FabricError } from '../../../domain/errors.ts';
import {
  controlStoreFor,
  embeddedHolder,
  exportAll,
  runLogsFor,
  syncRunlogs,
} from '../../../composition/control-store.ts';
import { didYouMean } from '../../../domain/words.ts';
import { parseCommandArgs } from '../args.ts';
import { type CliIo, EXIT } from '../io.ts';
import { plural } from '../../../domain/words.ts';

export const CONTROL_HELP = `Usage: fabric control <migrate|sync|export> [options]

The control plane mirrors every run to the \`control\` schema of a Postgres database: the
server FABRIC_DSN (or control.dsn) names, else an embedded PGlite database under
<runs_dir>/.control/. Mirroring is best-effort; these commands manage it.

  migrate             apply the schema migrations (idempotent)
  sync                backfill every runlog not yet mirrored (idempotent: run it twice, same rows)
  export [--out DIR]  write lm_usage_7d.json, lm_health_7d.json, lm_insights_7d.json and
                      lm_indicator.json to DIR (default: <runs_dir>/exports); safe when the
                      database is off (the files then say db_off)

Options:
  -c, --config FILE   the config file
      --json          print the outcome as JSON
  -h, --help          show this help
`;

/** Whether the control plane is the embedded database (on, and no DSN). */
function embedded(config: Awaited<ReturnType<typeof loadConfig>>): boolean {
  return config.control.enabled && (config.control.dsn ?? '').trim() === '';
}

/** `fabric control`. */
export async function controlCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandArgs('control', argv, {
    config: { type: 'string', short: 'c' },
    out: { type: 'string', short: 'o' },
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  const action = positionals[0];
  if (values.help || action === undefined) {
    io.stdout.write(CONTROL_HELP);
    return values.help ? EXIT.ok : EXIT.usage;
  }
  const config = await loadConfig({ configPath: values.config, cwd: io.cwd, env: io.env });
  // An export creates the embedded database only when there are runs to put in it.
  let store = await controlStoreFor(config, { existingOnly: action === 'export' });
  const print = (human: string, data: unknown) =>
    io.stdout.write(values.json ? `${JSON.stringify(data)}\n` : `${human}\n`);
  try {
    switch (action) {
      case 'migrate': {
        if (!store) throw disabled();
        const report = await store.migrate();
        print(
          `${store.kind} ${store.location}: schema at version ${report.version}` +
            (report.applied.length > 0 ? ` (applied ${report.applied.join(', ')})` : ' (nothing to apply)'),
          { store: store.kind, ...report },
        );
        return EXIT.ok;
      }
      case 'sync': {
        if (!store) throw disabled();
        await store.migrate();
        const report = await syncRunlogs(store, runLogsFor(config), {
          onRun: (runId, inserted) => {
            if (!values.json) io.stderr.write(`  ${runId}: ${plural(inserted, 'event')} added\n`);
          },
        });
        print(
          `synced ${plural(report.runsScanned, 'run')}: ${report.runsUpdated} updated, ${plural(report.eventsInserted, 'event')} and ` +
            `${plural(report.modelCallsInserted, 'model call')} added` +
            (report.runsInterrupted > 0
              ? `; ${plural(report.runsInterrupted, 'run')} whose process is gone marked interrupted`
              : '') +
            (report.failed.length > 0 ? `; ${plural(report.failed.length, 'unreadable runlog')}` : ''),
          report,
        );
        for (const failure of report.failed)
          io.stderr.write(`  could not read ${failure.runId}: ${failure.message}\n`);
        return report.failed.length > 0 ? EXIT.runFailed : EXIT.ok;
      }
      case 'export': {
        if (store === null && embedded(config)) {
          // No embedded database yet. Without runs there is nothing to export, and nothing is
          // created; with runlogs (one-shot runs leave the database alone) it is created and
          // filled from them, so the exports never hide a run (SPEC §7).
          const runlogs = (await runLogsFor(config).list()).length;
          if (runlogs === 0) {
            print(`Nothing to export: no runs yet in ${config.runs_dir}. No files written.`, {
              files: [],
              db_off: true,
              runs: 0,
            });
            return EXIT.ok;
          }
          store = await controlStoreFor(config);
        }
        const outDir = resolve(io.cwd, values.out ?? resolve(config.runs_dir, 'exports'));
        // The embedded database holds what its holders wrote; one-shot runs since then are in
        // their runlogs only, so they are written in first.
        if (store?.kind === 'pglite') {
          const held = await store.migrate().then(
            () => null,
            (error: unknown) => embeddedHolder(error),
          );
          // Another process (a server) has it open: its exports are not "database off"; they
          // are that process's to give.
          if (held !== null) {
            throw new FabricError(
              'backend_unavailable',
              `The embedded control database ${store.location} is in use by process ${held} (a fabric serve or another long-lived fabric), so it cannot be read from here. ` +
                'Ask that server for the exports (GET /v1/exports/lm_usage_7d, lm_health_7d, lm_insights_7d, GET /v1/lm-indicator), or stop it and run fabric control export again. No files written.',
            );
          }
          await syncRunlogs(store, runLogsFor(config)).catch(() => {});
        }
        await prepareOutDir(outDir);
        const result = await exportAll(store, outDir);
        print(
          `wrote ${plural(result.files.length, 'file')} to ${outDir}${result.dbOff ? ' (database off: db_off)' : ''}; ` +
            `indicator: ${result.exports.lm_indicator.status} (${result.exports.lm_indicator.reason})`,
          { files: result.files, db_off: result.dbOff, indicator: result.exports.lm_indicator },
        );
        return EXIT.ok;
      }
      default:
        throw new FabricError(
          'usage',
          `Unknown control action "${action}": use migrate, sync or export.${didYouMean(String(action), ['migrate', 'sync', 'export'])}`,
        );
    }
  } catch (error) {
    if (error instanceof FabricError) throw error;
    throw new FabricError(
      'backend_unavailable',
      `The control database (${store?.kind ?? 'disabled'} ${store?.location ?? ''}) is not reachable: ` +
        `${error instanceof Error ? error.message : String(error)}. Check FABRIC_DSN / control.dsn, or that the server runs.`,
      { cause: error },
    );
  } finally {
    await store?.close().catch(() => {});
  }
}

function disabled(): FabricError {
  return new FabricError('usage', 'The control plane is disabled (control.enabled: false in the config).');
}

/** The export directory, made if missing; a path that cannot be one is the user's to fix, not the database's. */
async function prepareOutDir(outDir: string): Promise<void> {
  try {
    await mkdir(outDir, { recursive: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why =
      code === 'EEXIST' || code === 'ENOTDIR'
        ? 'it (or a folder above it) is a file'
        : code === 'EACCES' || code === 'EPERM' || code === 'EROFS'
          ? 'it is not writable here'
          : `${code ?? String(error)}`;
    throw new FabricError('usage', `Cannot write the exports to ${outDir}: ${why}. Give another --out DIR.`, {
      cause: error,
    });
  }
}
