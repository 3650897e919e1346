/**
 * Modules the fabric loads on first use and then holds. A dynamic `import()` made again costs a
 * resolution each time, and once a custom pack has registered module hooks on Node 20 every
 * resolution is a round trip to the hooks' thread: so what a run needs is imported once per
 * process, not once per run or per command.
 */

/** `load` called on first use; its promise kept (a failure is forgotten, so a later call tries again). */
export function lazy<T>(load: () => Promise<T>): () => Promise<T> {
  let loaded: Promise<T> | undefined;
  return () => {
    loaded ??= load().catch((error: unknown) => {
      loaded = undefined;
      throw error;
    });
    return loaded;
  };
}

/** execa, loaded when the first process starts: most runs start none (execa is ~100 modules). */
export const loadExeca = lazy(() => import('execa'));
