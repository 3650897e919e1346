import type { FakeChatMessage, ScriptedTurn } from './fake-llm-server.ts';

/** How a scripted model behaves on the units pack. */
export type UnitsBehaviour = 'converts' | 'never_finishes';

/**
 * A responder for the `units` example pack that answers from the conversation itself: `converts`
 * calls convert_units, then finishes with the answer; `never_finishes` keeps sending an invalid
 * finish_task (no `answer`) until the run hits its step limit. Concurrent runs cannot take each
 * other's turns, since nothing is consumed.
 */
export function unitsResponder(
  behaviourOf: (model: string, task: string) => UnitsBehaviour,
  options: { delayMs?: number } = {},
): (request: { model: string; messages: readonly FakeChatMessage[] }) => ScriptedTurn {
  return ({ model, messages }) => {
    const task = messages.find((m) => m.role === 'user')?.content ?? '';
    const converted = messages.some((m) => m.role === 'tool' && m.content.includes(' = '));
    const usage = { prompt: 100 + messages.length * 10, completion: 10 };
    const turn = (reply: ScriptedTurn & { reply: unknown }) =>
      options.delayMs === undefined ? reply : { ...reply, delayMs: options.delayMs };
    if (behaviourOf(model, task) === 'never_finishes') {
      return turn({
        reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 'done?' } }], usage },
      });
    }
    if (!converted) {
      return turn({
        reply: {
          toolCalls: [{ name: 'convert_units', arguments: { value: 3, from: 'km', to: 'mi' } }],
          usage,
        },
      });
    }
    return turn({
      reply: {
        toolCalls: [{ name: 'finish_task', arguments: { summary: 'Converted.', answer: '1.864114 mi' } }],
        usage,
      },
    });
  };
}

/**
 * The edits a scripted model makes for each task of `examples/compositor-battery.yaml` and of the
 * example's OpenSpec change (`add-region-queries`: contains_point, then len).
 */
const COMPOSITOR_EDITS: Record<string, { file: string; anchor: string; code: string; test: string }> = {
  'contains_point(': {
    file: 'src/region.rs',
    anchor: '    /// The bounding box of the whole region.\n',
    code: '    pub fn contains_point(&self, x: i32, y: i32) -> bool {\n        self.rects.iter().any(|rect| rect.contains(crate::geometry::Point { x, y }))\n    }\n\n',
    test: '    #[test]\n    fn contains_point_sees_its_rectangles() {\n        let region = Region::from_rect(Rect::new(0, 0, 10, 10));\n        assert!(region.contains_point(5, 5));\n        assert!(!region.contains_point(10, 5));\n    }\n\n',
  },
  'len()': {
    file: 'src/region.rs',
    anchor: '    /// The bounding box of the whole region.\n',
    code: '    pub fn len(&self) -> usize {\n        self.rects.len()\n    }\n\n',
    test: '    #[test]\n    fn len_counts_disjoint_rectangles() {\n        let mut region = Region::new();\n        region.add(Rect::new(0, 0, 2, 2));\n        region.add(Rect::new(10, 10, 2, 2));\n        assert_eq!(region.len(), 2);\n    }\n\n',
  },
  'center(': {
    file: 'src/geometry.rs',
    anchor: '    /// The overlap of two rectangles, if they overlap at all.\n',
    code: '    pub fn center(&self) -> Point {\n        Point { x: self.loc.x + self.size.w / 2, y: self.loc.y + self.size.h / 2 }\n    }\n\n',
    test: '    #[test]\n    fn center_rounds_down() {\n        let c = Rect::new(0, 0, 5, 4).center();\n        assert_eq!((c.x, c.y), (2, 2));\n    }\n\n',
  },
};

/**
 * A responder for the rust specialist on the example battery: adds the function, then its test
 * (a wrong one when `wrongTest` says so for the model: it compiles, `cargo test` fails), then
 * finishes. Steps are counted from the tool results in the conversation.
 */
export function compositorResponder(
  wrongTest: (model: string) => boolean,
): (request: { model: string; messages: readonly FakeChatMessage[] }) => ScriptedTurn {
  return ({ model, messages }) => {
    // The task's first line: a daemon's task text goes on with the proposal and the tasks done.
    const task = (messages.find((m) => m.role === 'user')?.content ?? '').split('\n')[0] ?? '';
    const edit = Object.entries(COMPOSITOR_EDITS).find(([needle]) => task.includes(needle))?.[1];
    const step = messages.filter((m) => m.role === 'tool').length;
    const usage = { prompt: 500 + messages.length * 50, completion: 40 };
    const call = (name: string, args: Record<string, unknown>): ScriptedTurn => ({
      reply: { toolCalls: [{ name, arguments: args }], usage },
    });
    if (edit === undefined || step >= 2) return call('finish_task', { summary: 'Done.' });
    if (step === 0) {
      return call('edit_file', {
        path: edit.file,
        old_text: edit.anchor,
        new_text: `${edit.code}${edit.anchor}`,
      });
    }
    // A wrong test still compiles (the finish gate passes); `cargo test` then fails.
    const test = wrongTest(model)
      ? edit.test.replace('() {\n', '() {\n        assert_eq!(2 + 2, 5, "wrong on purpose");\n')
      : edit.test;
    const anchor = '    use super::*;\n\n';
    return call('edit_file', { path: edit.file, old_text: anchor, new_text: `${anchor}${test}` });
  };
}
