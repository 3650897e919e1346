/**
 * The order the suite's files start in: the slowest first, so that two workers end together
 * instead of one running a long file alone at the end. A clean clone has no timing cache, and
 * vitest then starts the largest files first, which are not the slowest (a 125 s install test
 * started 27th, a 32 s one last). The figures are seconds from a `.ci/run` on a clean clone
 * (stop 44's, on a machine about 1.7× slower than stop 43's: only their order matters);
 * a file not listed keeps vitest's own order, after these. Re-measure when the suite changes:
 * `grep -E '^ . test' ci.log | sort` on its output.
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const SECONDS: Readonly<Record<string, number>> = {
  'test/package/install.test.ts': 232,
  'test/interfaces/queue-end-cut-e2e.test.ts': 83,
  'test/interfaces/cli/daemon-e2e.test.ts': 80,
  'test/interfaces/cli/daemon-state.test.ts': 68,
  'test/infrastructure/control/pglite-control-store.test.ts': 60,
  'test/interfaces/cli/battery-e2e.test.ts': 52,
  'test/infrastructure/control/pglite-template.test.ts': 50,
  'test/infrastructure/control/postgres-connection-faults.test.ts': 49,
  'test/interfaces/cli/daemon-approvals.test.ts': 47,
  'test/interfaces/cli/runs.test.ts': 46,
  'test/package/docs-snippets.test.ts': 43,
  'test/interfaces/cli/daemon-escalation.test.ts': 41,
  'test/interfaces/cli/replay-bad-runlogs.test.ts': 41,
  'test/interfaces/cli/demo.test.ts': 39,
  'test/interfaces/cli/models-probe-e2e.test.ts': 38,
  'test/interfaces/cli/approvals-serve-e2e.test.ts': 37,
  'test/interfaces/cli/otel-e2e.test.ts': 33,
  'test/interfaces/cli/control-plane-held.test.ts': 32,
  'test/interfaces/queue-resume-e2e.test.ts': 32,
  'test/docs/errors-table.test.ts': 31,
  'test/interfaces/cli/daemon-baseline.test.ts': 27,
  'test/interfaces/cli/approvals-terminal-e2e.test.ts': 26,
  'test/interfaces/http/many-runs.test.ts': 26,
  'test/interfaces/queue-leases-e2e.test.ts': 22,
  'test/interfaces/http/viewer/viewer-approvals-browser.test.ts': 21,
  'test/interfaces/cli/rust-local-models-e2e.test.ts': 20,
};

export class SlowFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const base = await super.sort(files);
    const seconds = (spec: TestSpecification) =>
      SECONDS[spec.moduleId.slice(spec.project.config.root.length + 1)] ?? 0;
    // A stable sort: unlisted files (0) keep the base order, after the listed ones.
    return base
      .map((spec, index) => ({ spec, index }))
      .sort((a, b) => seconds(b.spec) - seconds(a.spec) || a.index - b.index)
      .map(({ spec }) => spec);
  }
}
