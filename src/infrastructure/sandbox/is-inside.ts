import path from 'node:path';

/** True when `candidate` is `root` or below it. Separator-aware: `/ws-evil` is not inside `/ws`. */
export function isInside(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate);
  return (
    relative === '' ||
    (relative !== '..' && !relative.startsWith(`..${path.sep}`) && !path.isAbsolute(relative))
  );
}
