/** The model id the demo's scripted server lists: what the run, its run_start and the viewer show. */
export const DEMO_MODEL = 'demo-scripted';

/** The task the demo gives the rust specialist. */
export const DEMO_TASK =
  '(fabric demo) Add Region::contains_point(x, y) to the compositor crate: true when the point is in the region.';

/** One scripted turn: a few words, then one tool call. */
export interface DemoTurn {
  readonly say: string;
  readonly tool: string;
  readonly arguments: Readonly<Record<string, unknown>>;
}

const ANCHOR = '    pub fn is_empty(&self) -> bool {';

const CONTAINS_POINT = `    /// Whether the point (x, y) is inside one of the region's rectangles.
    pub fn contains_point(&self, x: i32, y: i32) -> bool {
        let point = crate::geometry::Point { x, y };
        self.rects.iter().any(|rect| rect.contains(point))
    }

`;

/**
 * The demo's fixed script, answered turn by turn whatever the task says: look at the crate, read
 * the region module, add the method, check that it compiles, finish. The fabric around it is the
 * real one: each call goes through the rust pack's tools, its sandbox and cargo.
 */
export const DEMO_SCRIPT: readonly DemoTurn[] = [
  { say: "(demo) Let me look at the crate's sources first.", tool: 'list_files', arguments: { path: 'src' } },
  {
    say: '(demo) Regions live in src/region.rs; reading it.',
    tool: 'read_file',
    arguments: { path: 'src/region.rs' },
  },
  {
    say: '(demo) Adding contains_point next to is_empty, using Rect::contains.',
    tool: 'edit_file',
    arguments: { path: 'src/region.rs', old_text: ANCHOR, new_text: `${CONTAINS_POINT}${ANCHOR}` },
  },
  { say: '(demo) Checking that it compiles.', tool: 'cargo_check', arguments: {} },
  {
    say: '(demo) It compiles; done.',
    tool: 'finish_task',
    arguments: {
      summary: 'Added Region::contains_point(x, y): true when one of the rectangles holds the point.',
      artifacts: ['src/region.rs'],
      next_steps: [
        'Run a real model: fabric run --specialist rust --workspace compositor "…" (README, "Getting a model")',
      ],
      notes: "Written by fabric demo's scripted model (demo-scripted), not by a real one.",
    },
  },
];

/** The turn that answers a request holding `assistantTurns` earlier replies (the last one repeats). */
export function demoTurn(assistantTurns: number): DemoTurn {
  const last = DEMO_SCRIPT.length - 1;
  return DEMO_SCRIPT[Math.min(assistantTurns, last)] ?? (DEMO_SCRIPT[last] as DemoTurn);
}
