/**
 * A battery's progress on stderr: on a terminal, the matrix (a row per task, a column per
 * model) redrawn in place as cells start and end; on a pipe, one line per cell as it ends.
 */
import type { BatteryPlan, CellKey, CellResult } from '../../application/battery/battery-types.ts';
import { pairId, renderMatrix, renderModelTable } from '../../application/battery/battery-report.ts';
import { summarizeBattery } from '../../application/battery/battery-summary.ts';
import { cellId } from '../../application/battery/battery-types.ts';
import type { BatteryListener } from '../../application/battery/battery-session.ts';
import type { OutputStream } from './io.ts';
import type { Style } from './style.ts';
import { plural } from '../../domain/words.ts';

export class BatteryProgress implements BatteryListener {
  readonly #out: OutputStream;
  readonly #style: Style;
  readonly #plan: BatteryPlan;
  readonly #ended: CellResult[];
  readonly #running = new Map<string, number>();
  /** Lines of the matrix last drawn (terminal only), to move back over. */
  #drawn = 0;

  constructor(out: OutputStream, style: Style, plan: BatteryPlan, done: readonly CellResult[]) {
    this.#out = out;
    this.#style = style;
    this.#plan = plan;
    this.#ended = [...done];
  }

  /** Draws the matrix as it stands (a terminal only; a pipe gets it at the end). */
  start(): void {
    if (this.#out.isTTY) this.#draw();
  }

  onCellStart(cell: CellKey): void {
    const key = pairId(cell.task, cell.model);
    this.#running.set(key, (this.#running.get(key) ?? 0) + 1);
    if (this.#out.isTTY) this.#draw();
  }

  onCellEnd(result: CellResult): void {
    const key = pairId(result.task, result.model);
    const left = (this.#running.get(key) ?? 1) - 1;
    if (left > 0) this.#running.set(key, left);
    else this.#running.delete(key);
    this.#ended.push(result);
    if (this.#out.isTTY) this.#draw();
    else this.#out.write(`${this.#cellLine(result)}\n`);
  }

  /**
   * The final matrix, drawn once more (or for the first time, on a pipe), and under it each
   * model's scores: passed, its 95% interval, and over repeats pass^k and the flip rate.
   */
  finish(): void {
    this.#running.clear();
    if (this.#out.isTTY) this.#draw();
    else this.#out.write(`\n${renderMatrix(this.#plan, latest(this.#ended))}\n`);
    const summary = summarizeBattery(this.#plan, latest(this.#ended));
    this.#out.write(`\n${renderModelTable(this.#plan, summary)}\n`);
  }

  #cellLine(result: CellResult): string {
    const s = this.#style;
    const where = `${result.task} × ${result.model}${this.#plan.repeat > 1 ? ` #${result.repeat}` : ''}`;
    if (result.passed) {
      return `${s.green('✓')} ${where} · ${plural(result.steps, 'step')} · ${plural(result.tokens, 'token')} · ${result.seconds} s`;
    }
    const error = (result.error ?? '').split('\n')[0] ?? '';
    if (result.infrastructure === true) {
      const tries = (result.attempts ?? 1) > 1 ? ` (${plural(result.attempts ?? 1, 'attempt')})` : '';
      return `${s.yellow('⚠')} ${where} · infrastructure, not counted${tries}: ${error}`;
    }
    if (result.status === 'not_run') return `${s.yellow('–')} ${where} · not run: ${error}`;
    return `${s.red('✗')} ${where} · ${result.failed_check}: ${error} · ${plural(result.steps, 'step')}`;
  }

  #draw(): void {
    const running = new Set(this.#running.keys());
    const text = renderMatrix(this.#plan, latest(this.#ended), running);
    const up = this.#drawn > 0 ? `\u001b[${this.#drawn}A\u001b[J` : '';
    this.#out.write(`${up}${text}\n`);
    this.#drawn = text.split('\n').length;
  }
}

/** The last result of each cell (a resumed battery's cells may have ended twice). */
function latest(cells: readonly CellResult[]): CellResult[] {
  return [...new Map(cells.map((cell) => [cellId(cell), cell])).values()];
}
