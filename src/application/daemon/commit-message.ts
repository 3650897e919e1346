import type { OpenSpecTask } from './openspec.ts';

/**
 * Subject naming change and task; the `Fabric-Run` trailer links the commit to its run, and
 * `Fabric-Model` names the model that wrote the code (a reviewer of `git log` wants both).
 */
export function commitMessage(
  change: string,
  task: OpenSpecTask,
  runId: string,
  model: string | null,
  attempt: number,
  maxAttempts: number,
): string {
  const subject = `${change} ${task.id}: ${task.text}`;
  const short = subject.length > 72 ? `${subject.slice(0, 71)}…` : subject;
  return (
    `${short}\n\n` +
    `OpenSpec change ${change}, task ${task.id}: ${task.text}\n` +
    `Implemented by the fabric daemon (attempt ${attempt} of ${maxAttempts}); validated before this commit.\n\n` +
    `Fabric-Run: ${runId}\n` +
    (model === null || model === '' ? '' : `Fabric-Model: ${model}\n`)
  );
}
