/**
 * The part of `/viewer/live.js` that acts (SPEC §19), set inside its closure (it calls
 * `follow`): Approve / Deny of an approval card (`POST /v1/approvals/<id>`), and a running
 * run's Steer / Interrupt (`POST /v1/runs/<id>/messages`), Pause and Continue. Each is a POST
 * with the viewer's header; its result shows without a reload, then the page's approvals and
 * summary are fetched again and swapped in place. Only markup the server rendered is inserted;
 * the server's answers are set as text.
 */
export const ACTIONS_JS = `
  function viewerPost(path, body) {
    return fetch(path, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json', 'x-fabric-viewer': '1' },
      body: JSON.stringify(body),
    }).then(function (response) {
      return response.json().catch(function () { return {}; }).then(function (answer) {
        return { status: response.status, answer: answer || {} };
      });
    });
  }
  function refusal(result) {
    var error = result.answer.error || {};
    return (error.code || 'HTTP ' + result.status) + ': ' + (error.message || '');
  }

  // The page again, its approvals and summary swapped in place (the status line stays); a run
  // that went on again (answered, resumed by the server, perhaps already ended) shows its
  // newer steps, and is followed live from here while it runs.
  function refreshState() {
    return fetch(location.pathname + location.search, { credentials: 'same-origin' })
      .then(function (response) { return response.ok ? response.text() : Promise.reject(response.status); })
      .then(function (text) {
        var doc = new DOMParser().parseFromString(text, 'text/html');
        ['approvals', 'run-summary'].forEach(function (id) {
          var next = doc.getElementById(id);
          var current = document.getElementById(id);
          if (next && current) current.replaceWith(document.adoptNode(next));
        });
        var nextMain = doc.getElementById('main');
        if (!main || !nextMain || main.getAttribute('data-live') === 'true') return;
        // A run that went on (and may have ended) since this page was drawn: its timeline as
        // the server has it now, then followed live from there while it still runs.
        var seen = Number(main.getAttribute('data-last-seq')) || 0;
        var now = Number(nextMain.getAttribute('data-last-seq')) || 0;
        var timeline = document.getElementById('timeline');
        var nextTimeline = doc.getElementById('timeline');
        if (now > seen && timeline && nextTimeline) {
          timeline.replaceWith(document.adoptNode(nextTimeline));
          main.setAttribute('data-last-seq', String(now));
        }
        if (nextMain.getAttribute('data-live') === 'true') {
          main.setAttribute('data-live', 'true');
          follow(main);
        }
      })
      .catch(function () { /* the page still says what was answered */ });
  }

  // A parked run's page: an answer given anywhere (this page, another, the CLI, MCP, an expiry)
  // comes on the approvals stream; the page is fetched again until the server has resumed the
  // run, then follows it live to its end.
  function watchParked() {
    if (!main || main.getAttribute('data-live') === 'true' || !parked()) return;
    var source = new EventSource('/v1/approvals/events?run=' + encodeURIComponent(main.getAttribute('data-run-id')));
    var settling = false;
    source.addEventListener('approval_decided', function () {
      if (!settling) settle(20);
    });
    function settle(tries) {
      settling = true;
      refreshState().then(function () {
        if (main.getAttribute('data-live') === 'true' || !parked()) { source.close(); settling = false; return; }
        if (tries > 0) setTimeout(function () { settle(tries - 1); }, 500);
        else settling = false;
      });
    }
  }
  function parked() {
    var status = document.getElementById('run-status');
    return !!status && status.textContent.indexOf('awaiting_approval') >= 0;
  }

  function approvalActions() {
    document.addEventListener('submit', function (event) {
      var form = event.target;
      if (!form || !form.classList || !form.classList.contains('approval-form')) return;
      event.preventDefault();
      var id = form.getAttribute('data-approval-id');
      var submitter = event.submitter;
      var decision = submitter && submitter.value === 'deny' ? 'deny' : 'approve';
      var chosen = form.querySelector('input[type=radio]:checked');
      var body = { decision: decision, scope: form.elements.scope.value, pattern: chosen ? Number(chosen.value) : 0 };
      var text = form.elements.message.value;
      if (text.trim() !== '') body.message = text;
      var status = form.querySelector('.approval-status');
      var result = document.getElementById('approval-result');
      var buttons = form.querySelectorAll('button');
      buttons.forEach(function (button) { button.disabled = true; });
      if (status) status.textContent = 'Sending…';
      function say(line) {
        if (status) status.textContent = line;
        if (result) result.textContent = line;
      }
      viewerPost('/v1/approvals/' + encodeURIComponent(id), body)
        .then(function (sent) {
          if (sent.status === 200) {
            var answer = sent.answer.answer || {};
            say(id + ' ' + sent.answer.state + ' (' + answer.scope + ', through ' + answer.channel + ').');
            return refreshState();
          }
          if (sent.status === 409) {
            say('Already answered: ' + ((sent.answer.error || {}).message || id));
            return refreshState();
          }
          say(refusal(sent));
          buttons.forEach(function (button) { button.disabled = false; });
        })
        .catch(function (error) {
          say('The server did not answer: ' + error);
          buttons.forEach(function (button) { button.disabled = false; });
        });
    });
  }

  // Steer / Interrupt send the box's text; Pause and Continue hold and let go of the run between
  // steps. The timeline (live) shows each as it takes effect.
  function steerActions() {
    var form = document.getElementById('steer-form');
    if (!form) return;
    var id = form.getAttribute('data-run-id');
    var message = document.getElementById('steer-message');
    var base = '/v1/runs/' + encodeURIComponent(id);
    function send(path, body, done) {
      if (message) message.textContent = 'Sending…';
      viewerPost(base + path, body)
        .then(function (sent) {
          if (message) message.textContent = sent.status === 202 ? done(sent.answer) : refusal(sent);
        })
        .catch(function (error) { if (message) message.textContent = 'The server did not answer: ' + error; });
    }
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      var mode = event.submitter && event.submitter.value === 'interrupt' ? 'interrupt' : 'steer';
      var box = document.getElementById('steer-text');
      var text = box.value;
      if (text.trim() === '') return;
      send('/messages', { text: text, mode: mode }, function () {
        box.value = '';
        return mode === 'interrupt' ? 'Interrupt sent: the step in progress stops.' : 'Steer message sent: the model reads it after this step.';
      });
    });
    form.addEventListener('click', function (event) {
      var action = event.target && event.target.getAttribute && event.target.getAttribute('data-action');
      if (action === 'pause') send('/pause', {}, function () { return 'Pause asked: the run holds after this step.'; });
      if (action === 'resume') send('/resume', {}, function () { return 'Continue sent: the run goes on.'; });
    });
  }
`;
