import type { OpenSpecChange, OpenSpecTask } from './openspec.ts';

/** Bounds each document carried into a run's task text, so a long proposal cannot fill the context. */
const DOC_LIMIT = 6000;
const FEEDBACK_LIMIT = 8000;

/** What a task's run is told (SPEC §11). */
export interface TaskTextInput {
  readonly change: OpenSpecChange;
  readonly task: OpenSpecTask;
  /** The change's tasks already done, in document order. */
  readonly done: readonly OpenSpecTask[];
  readonly attempt: number;
  readonly maxAttempts: number;
  /** Why the previous attempt was not accepted (compiler and test output), or null on a first attempt. */
  readonly feedback: string | null;
}

/**
 * The run's task text: the task and its details first (what to do), then its section, the
 * change's proposal, design and spec deltas, the tasks done, and the last attempt's failure.
 */
export function buildTaskText(input: TaskTextInput): string {
  const { change, task } = input;
  const subTasks = change.tasks.filter((t) => t.parent === task.id);
  const what = task.text === '' ? 'the work of its sub-tasks below, as a whole' : task.text;
  const parts = [`Implement task ${task.id} of OpenSpec change "${change.id}": ${what}`];
  if (task.details.length > 0) parts.push(`Details of the task:\n${task.details.join('\n')}`);
  const parent = change.tasks.find((t) => t.id === task.parent);
  if (parent !== undefined) parts.push(`It is a sub-task of task ${parent.id}: ${parent.text}`);
  if (subTasks.length > 0) {
    parts.push(
      `Its sub-tasks are done already (check that together they do the task; finish what they leave):\n${subTasks.map((t) => `- [x] ${t.id} ${t.text}`).join('\n')}`,
    );
  }
  if (task.section !== null) parts.push(`The task is in section "${task.section}" of tasks.md.`);
  parts.push(
    'Work only on this task, in the repository (the workspace). Do not edit openspec/ and do not run git: ' +
      'the fabric checks your work with the validation commands (build and tests), ticks the task and commits it.',
  );
  if (input.feedback !== null) {
    parts.push(
      `This is attempt ${input.attempt} of ${input.maxAttempts}. The previous attempt was not accepted; the workspace ` +
        `still holds what it left. Fix this:\n${bounded(input.feedback, FEEDBACK_LIMIT, 'tail')}`,
    );
  }
  if (change.proposal.trim() !== '')
    parts.push(`## Proposal (proposal.md)\n${bounded(change.proposal, DOC_LIMIT)}`);
  if (change.design !== null && change.design.trim() !== '')
    parts.push(`## Design (design.md)\n${bounded(change.design, DOC_LIMIT)}`);
  for (const spec of change.specs) {
    parts.push(
      `## Spec delta: ${spec.capability} (specs/${spec.capability}/spec.md)\n${bounded(spec.text, DOC_LIMIT)}`,
    );
  }
  if (input.done.length > 0) {
    parts.push(
      `## Tasks of this change already done\n${input.done.map((t) => `- [x] ${t.id} ${t.text}`).join('\n')}`,
    );
  }
  return parts.join('\n\n');
}

function bounded(text: string, limit: number, keep: 'head' | 'tail' = 'head'): string {
  const trimmed = text.trim();
  if (trimmed.length <= limit) return trimmed;
  return keep === 'head'
    ? `${trimmed.slice(0, limit)}\n[… ${trimmed.length - limit} more characters]`
    : `[… ${trimmed.length - limit} earlier characters]\n${trimmed.slice(-limit)}`;
}
