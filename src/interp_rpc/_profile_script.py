# ruff: noqa: E501  (the script is JavaScript, kept readable)
"""The inline style and script of the profile's HTML (no network, no library).

The script runs only where the notebook is trusted (JupyterLab strips it
otherwise, and the static pictures stay). It swaps the static timeline for an
interactive one: wheel to zoom around the pointer, drag to pan, "reset" or a
double click to see everything, a card per item on hover, and columns
aggregated per pixel when more than ``aggregateAbove`` items are in view. It
also makes tables with class ``irpc-sortable`` sort when a header is clicked.
"""

STYLE = """
.interp-rpc-profile{color:var(--jp-ui-font-color1,#1f2328);font-size:12px}
.interp-rpc-profile table{border-collapse:collapse;margin:6px 0}
.interp-rpc-profile th,.interp-rpc-profile td{padding:2px 8px}
.interp-rpc-profile .irpc-warning{color:var(--jp-error-color1,#cf222e)}
.irpc-live svg{display:block;background:var(--jp-layout-color1,#fff)}
.irpc-live .lane{fill:var(--jp-layout-color2,#f0f2f4)}
.irpc-live .muted{fill:var(--jp-ui-font-color2,#59636e)}
.irpc-live button{margin-right:8px}
.irpc-card{position:absolute;pointer-events:none;background:var(--jp-layout-color0,#fff);
 color:var(--jp-ui-font-color1,#1f2328);border:1px solid var(--jp-border-color1,#8c959f);
 padding:4px 8px;border-radius:4px;white-space:pre;z-index:10}
.irpc-sortable th{cursor:pointer;text-decoration:underline dotted}
"""

SCRIPT = r"""
(function () {
  var root = document.currentScript && document.currentScript.closest('.interp-rpc-profile');
  if (!root) {
    var all = document.querySelectorAll('.interp-rpc-profile:not([data-irpc-ready])');
    root = all[all.length - 1];
  }
  if (!root || root.getAttribute('data-irpc-ready')) return;
  root.setAttribute('data-irpc-ready', '1');
  var dataBlock = root.querySelector('script.irpc-data');
  if (dataBlock) (function (d) {  // the timeline (a function profile alone has none)
  var NS = 'http://www.w3.org/2000/svg';
  var W = 900, LEFT = 76, RIGHT = 12, TOP = 30, LANE = 26, PLOT = W - LEFT - RIGHT;
  var H = TOP + LANE * d.workers + 24 + 18 * (1 + Math.floor((d.targets.length + 4) / 5));
  var live = root.querySelector('.irpc-live');
  var bar = document.createElement('div');
  var reset = document.createElement('button');
  reset.textContent = 'reset zoom';
  var range = document.createElement('span');
  bar.appendChild(reset); bar.appendChild(range); live.appendChild(bar);
  var svg = document.createElementNS(NS, 'svg');
  svg.setAttribute('width', W); svg.setAttribute('height', H);
  svg.setAttribute('class', 'interp-rpc-gantt'); svg.setAttribute('font-size', '11');
  svg.setAttribute('font-family', 'sans-serif');
  var wrap = document.createElement('div'); wrap.style.position = 'relative';
  wrap.appendChild(svg); live.appendChild(wrap);
  var card = document.createElement('div'); card.className = 'irpc-card'; card.hidden = true;
  wrap.appendChild(card);
  var v0 = 0, v1 = Math.max(1, d.span);
  var problem = {}; d.problems.forEach(function (p) { problem[p] = true; });

  function el(name, attrs, text) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    svg.appendChild(e); return e;
  }
  function x(t) { return LEFT + (t - v0) * PLOT / (v1 - v0); }
  function fmt(ns) {
    if (ns >= 1e9) return (ns / 1e9).toFixed(2) + ' s';
    if (ns >= 1e6) return (ns / 1e6).toFixed(2) + ' ms';
    return (ns / 1e3).toFixed(1) + ' µs';
  }
  function ticks() {
    var span = v1 - v0, raw = span / 8, step = 1;
    while (step * 10 <= raw) step *= 10;
    [1, 2, 5, 10].some(function (m) { if (step * m >= raw) { step *= m; return true; } });
    var unit = step >= 1e8 ? ['s', 1e9] : step >= 1e5 ? ['ms', 1e6] : ['µs', 1e3];
    var y = TOP + LANE * d.workers;
    for (var t = Math.ceil(v0 / step) * step; t <= v1; t += step) {
      el('line', {x1: x(t), x2: x(t), y1: y, y2: y + 4, stroke: 'currentColor'});
      el('text', {x: x(t), y: y + 15, 'text-anchor': 'middle', fill: 'currentColor'},
         +(t / unit[1]).toPrecision(6) + ' ' + unit[0]);
    }
  }
  function draw() {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    for (var w = 0; w < d.workers; w++) {
      el('text', {x: 4, y: TOP + w * LANE + 16, fill: 'currentColor'}, 'worker ' + w);
      el('rect', {x: LEFT, y: TOP + w * LANE + 2, width: PLOT, height: LANE - 4, 'class': 'lane'});
    }
    var visible = [];
    for (var i = 0; i < d.s.length; i++) if (d.e[i] >= v0 && d.s[i] <= v1) visible.push(i);
    var items = visible.reduce(function (a, i) { return a + d.n[i]; }, 0);
    if (items > d.aggregateAbove) drawColumns(visible); else visible.forEach(drawItem);
    ticks();
    var ly = TOP + LANE * d.workers + 38;
    d.targets.concat(['failed / cancelled / timed out']).forEach(function (name, k) {
      var lx = LEFT + (k % 5) * 165, yy = ly + Math.floor(k / 5) * 18;
      var bad = k === d.targets.length;
      el('rect', {x: lx, y: yy - 9, width: 12, height: 10, fill: bad ? 'none' : d.colours[k],
                  stroke: bad ? '#cf222e' : 'none', 'stroke-width': 2});
      el('text', {x: lx + 16, y: yy, fill: 'currentColor'}, name.length > 24 ? name.slice(0, 23) + '…' : name);
    });
    range.textContent = 'showing ' + fmt(v0) + ' to ' + fmt(v1) + ' (' + items + ' items' +
      (items > d.aggregateAbove ? ', aggregated per pixel column' : '') + ')' +
      (d.truncated ? '; ' + d.truncated + ' more items are not embedded: use Profile.export()' : '') +
      '. Wheel: zoom, drag: pan, double click: reset.';
  }
  function drawItem(i) {
    var y = TOP + d.w[i] * LANE, bx = Math.max(LEFT, x(d.s[i]));
    var bw = Math.max(1, Math.min(LEFT + PLOT, x(d.e[i])) - bx);
    var bad = problem[d.o[i]];
    var r = el('rect', {x: bx, y: y + 5, width: bw, height: LANE - 10, fill: d.colours[d.t[i]],
                        stroke: bad ? '#cf222e' : 'none', 'stroke-width': 2, 'data-item': i});
    r.addEventListener('mousemove', function (ev) { show(ev, itemCard(i)); });
    r.addEventListener('mouseleave', hide);
  }
  function drawColumns(visible) {
    var cols = {};
    visible.forEach(function (i) {
      var c0 = Math.max(0, Math.floor(x(d.s[i]) - LEFT)), c1 = Math.min(PLOT - 1, Math.floor(x(d.e[i]) - LEFT));
      var key = d.w[i] + ':' + c0;
      var c = cols[key] || (cols[key] = {w: d.w[i], c: c0, n: 0, busy: 0, bad: 0, t: {}});
      c.n += d.n[i]; if (problem[d.o[i]]) c.bad += d.n[i];
      c.t[d.t[i]] = (c.t[d.t[i]] || 0) + d.n[i];
      c.busy += Math.max(1e-3, (Math.min(v1, d.e[i]) - Math.max(v0, d.s[i])) * PLOT / (v1 - v0));
      for (var k = c0 + 1; k <= c1; k++) {
        var key2 = d.w[i] + ':' + k;
        var c2 = cols[key2] || (cols[key2] = {w: d.w[i], c: k, n: 0, busy: 0, bad: 0, t: {}});
        c2.busy += 1; c2.t[d.t[i]] = (c2.t[d.t[i]] || 0) + 1;
      }
    });
    Object.keys(cols).forEach(function (key) {
      var c = cols[key], main = +Object.keys(c.t).sort(function (a, b) { return c.t[b] - c.t[a]; })[0];
      var y = TOP + c.w * LANE;
      var r = el('rect', {x: LEFT + c.c, y: y + 4, width: 1, height: LANE - 8, fill: d.colours[main],
                          'fill-opacity': Math.max(0.25, Math.min(1, c.busy))});
      if (c.bad) el('rect', {x: LEFT + c.c, y: y + 1, width: 1, height: 3, fill: '#cf222e'});
      var text = c.n + ' item(s) start in this column' + (c.bad ? ', ' + c.bad + ' failed/cancelled' : '') +
        '\n' + Object.keys(c.t).map(function (t) { return d.targets[t]; }).join(', ');
      r.addEventListener('mousemove', function (ev) { show(ev, text); });
      r.addEventListener('mouseleave', hide);
    });
  }
  function itemCard(i) {
    var lines = ['target: ' + d.targets[d.t[i]],
      (d.n[i] > 1 ? 'items: ' + d.i[i] + '-' + (d.i[i] + d.n[i] - 1) : 'item: ' + (d.i[i] === null ? '-' : d.i[i])),
      'worker: ' + d.w[i], 'queue wait: ' + fmt(d.q[i]), 'run time: ' + fmt(d.e[i] - d.s[i]) +
      (d.g[i] > 1 ? ' (average of a group of ' + d.g[i] + ' short items)' : ''),
      'serialization: request ' + fmt(d.ser[i]) + ' + ' + fmt(d.de[i]) + ', results ' + fmt(d.rs[i]) +
      (d.ri[i] > 1 ? ' (for its chunk of ' + d.ri[i] + ' items)' : ''),
      'outcome: ' + d.outcomes[d.o[i]]];
    return lines.join('\n');
  }
  function show(ev, text) {
    var box = wrap.getBoundingClientRect();
    card.textContent = text; card.hidden = false;
    card.style.left = (ev.clientX - box.left + 12) + 'px'; card.style.top = (ev.clientY - box.top + 12) + 'px';
  }
  function hide() { card.hidden = true; }
  function zoomTo(a, b) {
    var min = 1000;
    if (b - a < min) { var m = (a + b) / 2; a = m - min / 2; b = m + min / 2; }
    v0 = Math.max(0, a); v1 = Math.min(Math.max(1, d.span), b); draw();
  }
  svg.addEventListener('wheel', function (ev) {
    ev.preventDefault();
    var box = svg.getBoundingClientRect();
    var t = v0 + (ev.clientX - box.left - LEFT) / PLOT * (v1 - v0);
    var f = ev.deltaY < 0 ? 0.8 : 1.25;
    zoomTo(t - (t - v0) * f, t + (v1 - t) * f);
  }, {passive: false});
  var dragging = null;
  svg.addEventListener('mousedown', function (ev) { dragging = {x: ev.clientX, v0: v0, v1: v1}; });
  window.addEventListener('mouseup', function () { dragging = null; });
  svg.addEventListener('mousemove', function (ev) {
    if (!dragging) return;
    var dt = (ev.clientX - dragging.x) / PLOT * (dragging.v1 - dragging.v0);
    var a = dragging.v0 - dt, b = dragging.v1 - dt;
    if (a < 0) { b -= a; a = 0; }
    if (b > d.span) { a -= b - d.span; b = d.span; }
    v0 = Math.max(0, a); v1 = b; draw();
  });
  function resetView() { v0 = 0; v1 = Math.max(1, d.span); draw(); }
  svg.addEventListener('dblclick', resetView);
  reset.addEventListener('click', resetView);
  draw();
  live.hidden = false;
  root.querySelector('.irpc-static').hidden = true;
  })(JSON.parse(dataBlock.textContent));

  root.querySelectorAll('table.irpc-sortable').forEach(function (table) {
    table.querySelectorAll('th[data-col]').forEach(function (th) {
      th.addEventListener('click', function () {
        var col = +th.getAttribute('data-col'), down = th.getAttribute('data-dir') !== 'desc';
        th.setAttribute('data-dir', down ? 'desc' : 'asc');
        var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = a.cells[col].getAttribute('data-v'), y = b.cells[col].getAttribute('data-v');
          var nx = parseFloat(x), ny = parseFloat(y);
          var c = isNaN(nx) || isNaN(ny) ? String(x).localeCompare(String(y)) : nx - ny;
          return down ? -c : c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
})();
"""
