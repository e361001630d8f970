/* The profile's interactive views in a notebook (no network, no library).

   interp_rpc/display/profile.py inlines this script after the profile's
   static pictures. It runs only where the notebook is trusted (JupyterLab
   strips scripts otherwise, and the static pictures stay). It swaps the
   static pictures for interactive ones, drawn in the theme's colours:

   - the timeline: wheel to zoom around the pointer, drag to pan, shift-drag
     to zoom to the dragged range, "reset" or a double click to see
     everything, a card per item on hover, and columns aggregated per pixel
     when more than `aggregateAbove` items are in view;
   - the icicle: a card per box on hover, a click zooms to that box (its
     callees fill the width), "reset" or a double click to see everything.

   It also makes tables with class `irpc-sortable` sort when a header is
   clicked. The svg of each view carries the range it shows as data
   attributes (data-view-start / data-view-end), which the browser tests read.
*/
(function () {
  var root = document.currentScript && document.currentScript.closest('.interp-rpc-profile');
  if (!root) {
    var all = document.querySelectorAll('.interp-rpc-profile:not([data-irpc-ready])');
    root = all[all.length - 1];
  }
  if (!root || root.getAttribute('data-irpc-ready')) return;
  root.setAttribute('data-irpc-ready', '1');
  var NS = 'http://www.w3.org/2000/svg', PROBLEM = '#cf222e';

  function fmt(ns) {
    if (ns >= 1e9) return (ns / 1e9).toFixed(2) + ' s';
    if (ns >= 1e6) return (ns / 1e6).toFixed(2) + ' ms';
    return (ns / 1e3).toFixed(1) + ' µs';
  }
  function data(cls) {
    var block = root.querySelector('script.' + cls);
    return block ? JSON.parse(block.textContent) : null;
  }
  // A view: a toolbar with a reset button and a status line, an svg, and a
  // hover card, inside `host`.
  function view(host, width, height) {
    var bar = document.createElement('div');
    var reset = document.createElement('button');
    reset.className = 'irpc-reset'; reset.textContent = 'reset zoom';
    var status = document.createElement('span'); status.className = 'irpc-range';
    bar.appendChild(reset); bar.appendChild(status); host.appendChild(bar);
    var svg = document.createElementNS(NS, 'svg');
    svg.setAttribute('width', width); svg.setAttribute('height', height);
    svg.setAttribute('viewBox', '0 0 ' + width + ' ' + height);
    svg.setAttribute('font-size', '11'); svg.setAttribute('font-family', 'sans-serif');
    var wrap = document.createElement('div'); wrap.style.position = 'relative';
    wrap.appendChild(svg); host.appendChild(wrap);
    var card = document.createElement('div'); card.className = 'irpc-card'; card.hidden = true;
    wrap.appendChild(card);
    return {
      svg: svg, reset: reset, status: status,
      el: function (name, attrs, text) {
        var e = document.createElementNS(NS, name);
        for (var k in attrs) e.setAttribute(k, attrs[k]);
        if (text !== undefined) e.textContent = text;
        svg.appendChild(e); return e;
      },
      clear: function () { while (svg.firstChild) svg.removeChild(svg.firstChild); },
      // The pointer's x in svg units (the svg may be scaled down to fit).
      x: function (ev) {
        var box = svg.getBoundingClientRect();
        return (ev.clientX - box.left) * width / box.width;
      },
      hover: function (target, text) {
        target.addEventListener('mousemove', function (ev) {
          var box = wrap.getBoundingClientRect();
          card.textContent = typeof text === 'function' ? text() : text; card.hidden = false;
          // Beside the pointer, on the side where it fits in the output.
          var left = ev.clientX - box.left + 12;
          if (left + card.offsetWidth > box.width) left = Math.max(0, left - card.offsetWidth - 24);
          card.style.left = left + 'px';
          card.style.top = (ev.clientY - box.top + 12) + 'px';
        });
        target.addEventListener('mouseleave', function () { card.hidden = true; });
      },
      hide: function () { card.hidden = true; }
    };
  }

  var d = data('irpc-data');
  if (d) (function () {  // the timeline (a function profile alone has none)
    var W = 900, LEFT = d.left || 76, RIGHT = 12, TOP = 30, LANE = 26, PLOT = W - LEFT - RIGHT;
    var H = TOP + LANE * d.workers + 24 + 18 * (1 + Math.floor((d.targets.length + 4) / 5));
    var live = root.querySelector('.irpc-live');
    var v = view(live, W, H), svg = v.svg, el = v.el;
    svg.setAttribute('class', 'interp-rpc-gantt');
    var FULL = Math.max(1, d.span), v0 = 0, v1 = FULL;
    var problem = {}; d.problems.forEach(function (p) { problem[p] = true; });

    function x(t) { return LEFT + (t - v0) * PLOT / (v1 - v0); }
    function timeAt(px) { return v0 + (px - LEFT) / PLOT * (v1 - v0); }
    function ticks() {
      var span = v1 - v0, raw = span / 8, step = 1;
      while (step * 10 <= raw) step *= 10;
      [1, 2, 5, 10].some(function (m) { if (step * m >= raw) { step *= m; return true; } });
      var unit = step >= 1e8 ? ['s', 1e9] : step >= 1e5 ? ['ms', 1e6] : ['µs', 1e3];
      var y = TOP + LANE * d.workers;
      for (var k = Math.ceil(v0 / step); k * step <= v1; k++) {
        var t = k * step;
        el('line', {x1: x(t), x2: x(t), y1: y, y2: y + 4, stroke: 'currentColor'});
        el('text', {x: x(t), y: y + 15, 'text-anchor': 'middle', fill: 'currentColor', 'class': 'tick'},
           +(t / unit[1]).toPrecision(6) + ' ' + unit[0]);
      }
    }
    function draw() {
      v.clear(); v.hide();
      svg.setAttribute('data-view-start', v0); svg.setAttribute('data-view-end', v1);
      for (var w = 0; w < d.workers; w++) {
        el('text', {x: 4, y: TOP + w * LANE + 16, fill: 'currentColor'},
           d.laneLabels ? d.laneLabels[w] : 'worker ' + w);
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
                    stroke: bad ? PROBLEM : 'none', 'stroke-width': 2});
        el('text', {x: lx + 16, y: yy, fill: 'currentColor'}, !bad && name.length > 24 ? name.slice(0, 23) + '…' : name);
      });
      v.status.textContent = 'showing ' + fmt(v0) + ' to ' + fmt(v1) + ' (' + items + ' items' +
        (items > d.aggregateAbove ? ', aggregated per pixel column' : '') + ')' +
        (d.truncated ? '; ' + d.truncated + ' more items are not embedded: use Profile.export()' : '') +
        '. Wheel: zoom, drag: pan, shift-drag: zoom to a range, double click: reset.';
    }
    function drawItem(i) {
      var y = TOP + d.w[i] * LANE, bx = Math.max(LEFT, x(d.s[i]));
      var bw = Math.max(1, Math.min(LEFT + PLOT, x(d.e[i])) - bx);
      var bad = problem[d.o[i]];
      var r = el('rect', {x: bx, y: y + 5, width: bw, height: LANE - 10, fill: d.colours[d.t[i]],
                          'class': 'bar', 'data-item': i});
      if (bad) r.setAttribute('style', 'stroke:' + PROBLEM + ';stroke-width:2');
      if (bad) el('path', {d: 'M' + bx + ' ' + (y + 1) + 'l4 0l-2 4z', fill: PROBLEM});
      v.hover(r, function () { return itemCard(i); });
    }
    function drawColumns(visible) {
      var cols = {};
      function column(w, c) {
        var key = w + ':' + c;
        return cols[key] || (cols[key] = {w: w, c: c, n: 0, busy: 0, bad: 0, t: {}});
      }
      var perColumn = (v1 - v0) / PLOT;
      visible.forEach(function (i) {
        var s = Math.max(v0, d.s[i]), e = Math.min(v1, d.e[i]);
        var c0 = Math.min(PLOT - 1, Math.floor((s - v0) / perColumn));
        var c1 = Math.min(PLOT - 1, Math.floor((e - v0) / perColumn));
        for (var k = c0; k <= c1; k++) {
          var c = column(d.w[i], k);
          c.n += d.n[i]; if (problem[d.o[i]]) c.bad += d.n[i];
          var share = (Math.min(e, v0 + (k + 1) * perColumn) - Math.max(s, v0 + k * perColumn)) / perColumn;
          c.busy += Math.max(0, share);
          c.t[d.t[i]] = (c.t[d.t[i]] || 0) + Math.max(share, 1e-9);
        }
      });
      Object.keys(cols).forEach(function (key) {
        var c = cols[key], main = +Object.keys(c.t).sort(function (a, b) { return c.t[b] - c.t[a]; })[0];
        var y = TOP + c.w * LANE;
        var r = el('rect', {x: LEFT + c.c, y: y + 4, width: 1, height: LANE - 8, fill: d.colours[main],
                            'fill-opacity': Math.max(0.25, Math.min(1, c.busy)), 'data-column': c.c});
        if (c.bad) el('rect', {x: LEFT + c.c, y: y + 1, width: 1, height: 3, fill: PROBLEM});
        var text = c.n + ' item(s) in this column' + (c.bad ? ', ' + c.bad + ' failed, cancelled or timed out' : '') +
          '\nbusy ' + Math.round(Math.min(1, c.busy) * 100) + '% of it\n' +
          Object.keys(c.t).map(function (t) { return d.targets[t]; }).join(', ');
        v.hover(r, text);
      });
    }
    function itemCard(i) {
      var lines = ['target: ' + d.targets[d.t[i]],
        (d.n[i] > 1 ? 'items: ' + d.i[i] + '-' + (d.i[i] + d.n[i] - 1) +
         ' (one bar: their own times are not known)' : 'item: ' + (d.i[i] === null ? '-' : d.i[i])),
        'worker: ' + d.w[i], 'queue wait: ' + fmt(d.q[i]), 'run time: ' + fmt(d.e[i] - d.s[i]) +
        (d.g[i] > 1 ? ' (average of a group of ' + d.g[i] + ' short items)' : ''),
        'serialization: request ' + fmt(d.ser[i]) + ' + ' + fmt(d.de[i]) + ', results ' + fmt(d.rs[i]) +
        (d.ri[i] > 1 ? ' (for its chunk of ' + d.ri[i] + ' items)' : ''),
        'outcome: ' + d.outcomes[d.o[i]] + (d.g[i] > 1 && d.outcomes[d.o[i]] === 'timed out' ?
          ' (one of its group of ' + d.g[i] + ' ran when the caller gave up)' : '')];
      return lines.join('\n');
    }
    function zoomTo(a, b) {
      var min = Math.min(1000, FULL);  // 1 µs: finer than the clock is worth
      if (b - a < min) { var m = (a + b) / 2; a = m - min / 2; b = m + min / 2; }
      if (a < 0) { b -= a; a = 0; }
      if (b > FULL) { a = Math.max(0, a - (b - FULL)); b = FULL; }
      v0 = a; v1 = b; draw();
    }
    svg.addEventListener('wheel', function (ev) {
      ev.preventDefault();
      var t = timeAt(Math.min(LEFT + PLOT, Math.max(LEFT, v.x(ev))));
      var f = ev.deltaY < 0 ? 0.8 : 1.25;
      zoomTo(t - (t - v0) * f, t + (v1 - t) * f);
    }, {passive: false});
    var drag = null, selection = null;
    svg.addEventListener('mousedown', function (ev) {
      if (ev.button !== 0) return;
      ev.preventDefault();  // no text selection while dragging
      drag = {x: v.x(ev), v0: v0, v1: v1, zoom: ev.shiftKey};
    });
    window.addEventListener('mousemove', function (ev) {
      if (!drag) return;
      var px = v.x(ev);
      if (drag.zoom) {
        if (selection) svg.removeChild(selection);
        var a = Math.max(LEFT, Math.min(drag.x, px)), b = Math.min(LEFT + PLOT, Math.max(drag.x, px));
        selection = el('rect', {x: a, y: TOP, width: Math.max(0, b - a), height: LANE * d.workers, 'class': 'irpc-selection'});
        return;
      }
      var dt = (px - drag.x) / PLOT * (drag.v1 - drag.v0);
      zoomTo(drag.v0 - dt, drag.v1 - dt);
    });
    window.addEventListener('mouseup', function (ev) {
      if (!drag) return;
      var start = drag; drag = null;
      if (selection) { svg.removeChild(selection); selection = null; }
      var px = v.x(ev);
      if (start.zoom && Math.abs(px - start.x) > 2) zoomTo(timeAt(Math.min(start.x, px)), timeAt(Math.max(start.x, px)));
    });
    function resetView() { v0 = 0; v1 = FULL; draw(); }
    svg.addEventListener('dblclick', resetView);
    v.reset.addEventListener('click', resetView);
    draw();
    live.hidden = false;
    root.querySelector('.irpc-static').hidden = true;
  })();

  var ic = data('irpc-icicle-data');
  if (ic) (function () {  // the icicle of the function profile
    var W = ic.width, ROW = 18, H = Math.max(ROW, ic.depth * ROW);
    var host = root.querySelector('.irpc-icicle-live');
    var v = view(host, W, H), svg = v.svg, el = v.el;
    svg.setAttribute('class', 'irpc-icicle');
    var focus = -1;  // the node zoomed to, or -1: all
    function draw() {
      v.clear(); v.hide();
      var f0 = 0, fw = 1;
      if (focus >= 0) { f0 = ic.x[focus]; fw = ic.w[focus]; }
      svg.setAttribute('data-view-start', f0); svg.setAttribute('data-view-end', f0 + fw);
      ic.x.forEach(function (nx, n) {
        var a = Math.max(nx, f0), b = Math.min(nx + ic.w[n], f0 + fw);
        if (b <= a) return;
        var bx = (a - f0) / fw * W, bw = (b - a) / fw * W;
        if (bw < 0.5) return;
        var y = ic.d[n] * ROW;
        var r = el('rect', {x: bx, y: y, width: bw, height: ROW - 1, fill: ic.colours[n % ic.colours.length],
                            'fill-opacity': 0.35, stroke: 'currentColor', 'stroke-opacity': 0.3,
                            'stroke-width': 0.5, 'data-node': n, 'data-name': ic.name[n]});
        var chars = Math.floor((bw - 6) / 6.5);
        if (chars > 1) {
          var name = ic.short[n];
          el('text', {x: bx + 3, y: y + 13, fill: 'currentColor', 'pointer-events': 'none'},
             name.length > chars ? name.slice(0, chars - 1) + '…' : name);
        }
        v.hover(r, function () {
          return ic.name[n] + '\ncalls: ' + ic.calls[n] + '\ntotal time: ' + fmt(ic.tt[n]) +
            ' (in the function itself)\ncumulative time: ' + fmt(ic.ct[n]) +
            '\n' + (100 * ic.w[n]).toFixed(1) + '% of the profiled time' +
            '\nclick: zoom to it';
        });
        r.addEventListener('click', function () { focus = n; draw(); });
      });
      v.status.textContent = (focus >= 0 ? 'zoomed to ' + ic.short[focus] + '. ' : '') +
        'Hover: details, click: zoom to a function, double click: reset.';
    }
    function resetView() { focus = -1; draw(); }
    svg.addEventListener('dblclick', resetView);
    v.reset.addEventListener('click', resetView);
    draw();
    host.hidden = false;
    var picture = root.querySelector('.irpc-icicle-img');
    if (picture) picture.hidden = true;
  })();

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
