import type { RunView } from '../run-view.ts';
import { type SafeHtml, html } from './html.ts';

/**
 * A running run's controls (SPEC §19): a message to the model sent as a steer (read after the
 * step in progress) or an interrupt (the step stops now), and Pause / Continue between steps.
 * `POST /v1/runs/<id>/messages`, `/pause` and `/resume`, as the viewer's actions; the run's
 * timeline shows what they did. The page's script takes the section away once the run ends.
 */
export function steerControls(view: RunView): SafeHtml {
  if (view.status !== 'running') return html``;
  return html`<section id="steer" aria-labelledby="steer-heading">
<h2 id="steer-heading">Steer the run</h2>
<form id="steer-form" class="actions" data-run-id="${view.run_id}">
<p><label for="steer-text">Message to the model</label><br>
<textarea id="steer-text" name="text" rows="3" cols="60" maxlength="100000" required></textarea></p>
<p><button id="steer-button" type="submit" name="mode" value="steer">Steer</button>
<button id="interrupt-button" type="submit" name="mode" value="interrupt">Interrupt</button>
<button id="pause-button" type="button" data-action="pause">Pause</button>
<button id="continue-button" type="button" data-action="resume">Continue</button>
<span id="steer-message" role="status"></span></p>
<p class="meta">Steer: the model reads it after the step in progress. Interrupt: the step in progress stops (a running command too) and the model reads it at once. Pause holds the run between steps until Continue.</p>
</form>
</section>`;
}
