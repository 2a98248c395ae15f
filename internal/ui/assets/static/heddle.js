// heddle web UI: keeps the open page current and asks before a button that
// cannot be undone. The pages work without it; they only stop refreshing.
(function () {
  'use strict';
  var interval = parseInt(document.body.getAttribute('data-refresh') || '0', 10);
  var live = document.getElementById('live');
  var storeKey = 'heddle-live';

  // A flash message belongs to the action that led here: drop its mark
  // from the address, so that a reload or a refresh does not repeat it.
  if (location.search.indexOf('done=') >= 0 && window.history.replaceState) {
    var u = new URL(location.href);
    u.searchParams.delete('done');
    window.history.replaceState(null, '', u.pathname + u.search + u.hash);
  }

  if (live) {
    live.checked = sessionStorage.getItem(storeKey) !== 'off';
    live.addEventListener('change', function () {
      sessionStorage.setItem(storeKey, live.checked ? 'on' : 'off');
    });
  }

  // busy reports whether the person is typing into the page: a refresh
  // would throw away what they typed.
  function busy() {
    var a = document.activeElement;
    if (!a || a === document.body) { return false; }
    var tag = a.tagName;
    return tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT';
  }

  var inFlight = false;
  function refresh() {
    if (inFlight || !live || !live.checked || document.hidden || busy()) { return; }
    inFlight = true;
    fetch(location.href, { credentials: 'same-origin', headers: { 'X-Heddle-Refresh': '1' } })
      .then(function (r) {
        // Signed out, or the page is gone: load it as a person would.
        if (r.redirected) { location.reload(); return null; }
        return r.text();
      })
      .then(function (html) {
        if (html === null || busy()) { return; }
        var next = new DOMParser().parseFromString(html, 'text/html').getElementById('content');
        var cur = document.getElementById('content');
        if (!next || !cur) { return; }
        // Payloads a person opened stay open.
        cur.querySelectorAll('details[open][id]').forEach(function (d) {
          var same = next.querySelector('#' + CSS.escape(d.id));
          if (same) { same.open = true; }
        });
        // The message of the action that led here stays until the person
        // leaves the page.
        var flash = cur.querySelector('#flash');
        if (flash && !next.querySelector('#flash')) { next.insertBefore(flash, next.firstChild); }
        cur.replaceWith(next);
      })
      .catch(function () { /* the server is away; the next tick tries again */ })
      .then(function () { inFlight = false; });
  }
  if (interval > 0) { setInterval(refresh, interval); }

  // A form with data-confirm asks first.
  document.addEventListener('submit', function (e) {
    var msg = e.target.getAttribute('data-confirm');
    if (msg && !window.confirm(msg)) { e.preventDefault(); }
  });
})();
