/**
 * OpenSpec change sets as the daemon sees them (SPEC §11), and the port that reads them. The
 * adapter is `src/infrastructure/openspec/`. Nothing here does I/O.
 */

/**
 * One task of `tasks.md` as OpenSpec counts it (any list line with a checkbox: `- [ ] 1.2 text`,
 * `1. [ ] text`, nested ones too), with its indented detail lines.
 */
export interface OpenSpecTask {
  /**
   * `1.2` as written; a task without a number gets `<section>#<n>` (the section's number, or `s`
   * and its place among the headings, then the task's place in the section); a number an earlier
   * task took gets `@<line>` after it. No two tasks of a file share an id.
   */
  readonly id: string;
  readonly text: string;
  readonly done: boolean;
  /** The indented lines under the item (acceptance criteria, test plan), indentation trimmed. */
  readonly details: readonly string[];
  /** The `## N. Title` heading the item is under, as written without the hashes; null before any. */
  readonly section: string | null;
  /** 1-based line of the item in `tasks.md`. */
  readonly line: number;
  /** The id of the task this one is nested under, or null. */
  readonly parent: string | null;
}

/**
 * The order the daemon works through a change's tasks: document order, except that a nested
 * task comes before the task it sits under (a parent is done after its sub-tasks).
 */
export function workOrder(tasks: readonly OpenSpecTask[]): OpenSpecTask[] {
  const children = new Map<string | null, OpenSpecTask[]>();
  for (const task of tasks) children.set(task.parent, [...(children.get(task.parent) ?? []), task]);
  const ordered: OpenSpecTask[] = [];
  const visit = (task: OpenSpecTask): void => {
    for (const child of children.get(task.id) ?? []) visit(child);
    ordered.push(task);
  };
  for (const top of children.get(null) ?? []) visit(top);
  return ordered;
}

/** A spec delta: `specs/<capability>/spec.md`. */
export interface SpecDelta {
  readonly capability: string;
  readonly text: string;
}

/** `openspec/changes/<id>/`. */
export interface OpenSpecChange {
  readonly id: string;
  /** Its tasks.md, relative to the repository (`openspec/changes/<id>/tasks.md`). */
  readonly tasksFile: string;
  readonly proposal: string;
  readonly design: string | null;
  readonly specs: readonly SpecDelta[];
  readonly tasks: readonly OpenSpecTask[];
}

/** A change that could not be read, and why (the message names the file and line). */
export interface UnreadableChange {
  readonly id: string;
  readonly message: string;
}

/** What a scan of `openspec/changes/` found. */
export interface OpenSpecScan {
  readonly changes: readonly OpenSpecChange[];
  readonly unreadable: readonly UnreadableChange[];
}

/** The OpenSpec port: scans the change sets and ticks a task's box. */
export interface OpenSpecSource {
  /** The changes (archive excluded) in name order, each task in document order. */
  scan(): Promise<OpenSpecScan>;
  /**
   * Ticks the task's box in its `tasks.md`: that one character, the rest byte for byte the same.
   * Throws when the file changed so that the line is no longer that task.
   */
  tick(changeId: string, task: OpenSpecTask): Promise<void>;
}
