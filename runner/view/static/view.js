// waza view: the only script of the app. It never builds markup from data: the server sends
// fragments it has already escaped, and this script only asks for them and puts them in place.
(function () {
  'use strict';
  var PERIOD = 1000;

  function poll(el) {
    var url = el.getAttribute('data-poll');
    var mode = el.getAttribute('data-mode') || 'append';
    function tick() {
      var next = el.getAttribute('data-next');
      var version = el.getAttribute('data-v');
      var full = url + (next !== null ? (url.indexOf('?') < 0 ? '?' : '&') + 'from=' + encodeURIComponent(next) : '');
      if (version !== null) { full += (full.indexOf('?') < 0 ? '?' : '&') + 'v=' + encodeURIComponent(version); }
      fetch(full, {headers: {'Accept': 'application/json'}, cache: 'no-store'})
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (data) {
          if (data && data.v !== undefined) { el.setAttribute('data-v', String(data.v)); }
          if (data && !data.same) {
            if (mode === 'replace') {
              if (data.html !== el.getAttribute('data-last')) { el.innerHTML = data.html; el.setAttribute('data-last', data.html); }
            } else if (data.html) {
              el.insertAdjacentHTML('beforeend', data.html);
            }
            if (data.next !== undefined) { el.setAttribute('data-next', String(data.next)); }
            if (data.status !== undefined) {
              var s = document.getElementById(el.getAttribute('data-status-box'));
              if (s) { s.textContent = data.status; }
            }
          }
          setTimeout(tick, PERIOD);
        })
        .catch(function () { setTimeout(tick, PERIOD * 5); });
    }
    setTimeout(tick, PERIOD);
  }

  document.addEventListener('DOMContentLoaded', function () {
    document.querySelectorAll('[data-poll]').forEach(poll);
    // A select that picks a run submits its form at once.
    document.querySelectorAll('select[data-submit]').forEach(function (s) {
      s.addEventListener('change', function () { s.form.submit(); });
    });
  });
})();
