/** A compaction in words, for the progress lines, the replay timeline and the viewer. */
export function describeCompaction(event: {
  readonly stubbed: number;
  readonly summarised?: number;
  readonly tokens_before: number;
  readonly tokens_after: number;
  readonly window_tokens: number;
}): string {
  const parts = [
    ...(event.stubbed > 0
      ? [`${event.stubbed} old tool result${event.stubbed === 1 ? '' : 's'} stubbed`]
      : []),
    ...(event.summarised === undefined
      ? []
      : [`${event.summarised} earlier message${event.summarised === 1 ? '' : 's'} summarised`]),
  ];
  return `${parts.join(', ')}, ~${event.tokens_before} → ~${event.tokens_after} of ${event.window_tokens} tokens`;
}
