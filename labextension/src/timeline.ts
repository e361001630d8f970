/* The interactive timeline: a lane per worker, a bar per item, the legend.

   Wheel to zoom around the pointer, drag to pan, shift-drag to zoom to the
   dragged range, "reset" or a double click to see everything, a card per
   item on hover. When more than `aggregateAbove` items are in view, bars are
   aggregated per pixel column (shade: the share of the column busy, colour:
   its main target). The svg carries the range it shows as data attributes
   (data-view-start, data-view-end), which the browser tests read. */

import { IRecords, ITimelineData, records } from './data';
import { duration, short, ticks } from './format';
import { View } from './view';

/** The mark of a failed, cancelled or timed-out item. */
export const PROBLEM = '#cf222e';
const WIDTH = 900;
const RIGHT = 12;
const TOP = 30;
const LANE = 26;
/** The narrowest range a zoom shows: 1 µs, finer than the clock is worth. */
const FINEST_NS = 1000;

/** Per (worker, pixel column) cell: what the aggregated view draws. */
interface IColumns {
  busy: Float64Array;
  items: Int32Array;
  bad: Int32Array;
  shares: Map<number, number[]>;
}

export class Timeline {
  private readonly view: View;
  private readonly records: IRecords;
  private readonly problem: Set<number>;
  private readonly left: number;
  private readonly plot: number;
  private readonly full: number;
  private v0 = 0;
  private v1: number;
  private columns: IColumns | null = null;

  constructor(
    host: HTMLElement,
    private readonly data: ITimelineData
  ) {
    this.records = records(data);
    this.problem = new Set(data.problems);
    this.left = data.left || 76;
    this.plot = WIDTH - this.left - RIGHT;
    this.full = Math.max(1, data.span);
    this.v1 = this.full;
    const legendRows = 1 + Math.floor((data.targets.length + 4) / 5);
    const height = TOP + LANE * data.workers + 24 + 18 * legendRows;
    this.view = new View(host, WIDTH, height, target => this.describe(target));
    this.view.svg.classList.add('interp-rpc-gantt');
    this.listen();
    this.draw();
  }

  private x(t: number): number {
    return this.left + ((t - this.v0) * this.plot) / (this.v1 - this.v0);
  }

  private timeAt(px: number): number {
    return this.v0 + ((px - this.left) / this.plot) * (this.v1 - this.v0);
  }

  draw(): void {
    const started = performance.now();
    const { view, data, records: r } = this;
    view.clear();
    view.svg.setAttribute('data-view-start', String(this.v0));
    view.svg.setAttribute('data-view-end', String(this.v1));
    for (let w = 0; w < data.workers; w++) {
      view.el(
        'text',
        { x: 4, y: TOP + w * LANE + 16, fill: 'currentColor' },
        data.laneLabels[w] ?? 'worker ' + w
      );
      view.el('rect', {
        x: this.left,
        y: TOP + w * LANE + 2,
        width: this.plot,
        height: LANE - 4,
        class: 'lane'
      });
    }
    const visible: number[] = [];
    let items = 0;
    for (let i = 0; i < r.count; i++) {
      if (r.end[i] >= this.v0 && r.start[i] <= this.v1) {
        visible.push(i);
        items += r.items[i];
      }
    }
    const aggregated = items > data.aggregateAbove;
    this.columns = null;
    if (aggregated) {
      this.drawColumns(visible);
    } else {
      for (const i of visible) {
        this.drawItem(i);
      }
    }
    this.drawAxis();
    this.drawLegend();
    view.status.textContent =
      `showing ${duration(this.v0)} to ${duration(this.v1)} (${items} items` +
      (aggregated ? ', aggregated per pixel column' : '') +
      ')' +
      (data.truncated
        ? `; ${data.truncated} more items are not embedded: use Profile.export()`
        : '') +
      '. Wheel: zoom, drag: pan, shift-drag: zoom to a range, double click: reset.';
    // What the last drawing cost in script time (ms): the bench reads it.
    view.svg.setAttribute('data-draw-ms', (performance.now() - started).toFixed(1));
  }

  private drawItem(i: number): void {
    const r = this.records;
    const y = TOP + r.worker[i] * LANE;
    const bx = Math.max(this.left, this.x(r.start[i]));
    const bw = Math.max(1, Math.min(this.left + this.plot, this.x(r.end[i])) - bx);
    const bad = this.problem.has(r.outcome[i]);
    const bar = this.view.el('rect', {
      x: bx,
      y: y + 5,
      width: bw,
      height: LANE - 10,
      fill: this.data.colours[r.target[i]],
      class: 'bar',
      'data-item': i
    });
    if (bad) {
      bar.setAttribute('style', `stroke:${PROBLEM};stroke-width:2`);
      this.view.el('path', { d: `M${bx} ${y + 1}l4 0l-2 4z`, fill: PROBLEM });
    }
  }

  private drawColumns(visible: number[]): void {
    const { records: r, data, plot } = this;
    const cells = data.workers * plot;
    const columns: IColumns = {
      busy: new Float64Array(cells),
      items: new Int32Array(cells),
      bad: new Int32Array(cells),
      shares: new Map()
    };
    const perColumn = (this.v1 - this.v0) / plot;
    for (const i of visible) {
      const s = Math.max(this.v0, r.start[i]);
      const e = Math.min(this.v1, r.end[i]);
      const c0 = Math.min(plot - 1, Math.floor((s - this.v0) / perColumn));
      const c1 = Math.min(plot - 1, Math.floor((e - this.v0) / perColumn));
      const bad = this.problem.has(r.outcome[i]);
      for (let k = c0; k <= c1; k++) {
        const cell = r.worker[i] * plot + k;
        columns.items[cell] += r.items[i];
        if (bad) {
          columns.bad[cell] += r.items[i];
        }
        const from = Math.max(s, this.v0 + k * perColumn);
        const to = Math.min(e, this.v0 + (k + 1) * perColumn);
        const share = Math.max(0, (to - from) / perColumn);
        columns.busy[cell] += share;
        let shares = columns.shares.get(cell);
        if (shares === undefined) {
          shares = [];
          columns.shares.set(cell, shares);
        }
        shares[r.target[i]] = (shares[r.target[i]] ?? 0) + Math.max(share, 1e-9);
      }
    }
    this.columns = columns;
    for (const [cell, shares] of columns.shares) {
      const w = Math.floor(cell / plot);
      const k = cell % plot;
      let main = 0;
      shares.forEach((share, t) => {
        if (share > (shares[main] ?? -1)) {
          main = t;
        }
      });
      const y = TOP + w * LANE;
      this.view.el('rect', {
        x: this.left + k,
        y: y + 4,
        width: 1,
        height: LANE - 8,
        fill: data.colours[main],
        'fill-opacity': Math.max(0.25, Math.min(1, columns.busy[cell])),
        'data-column': k,
        'data-cell': cell
      });
      if (columns.bad[cell]) {
        this.view.el('rect', { x: this.left + k, y: y + 1, width: 1, height: 3, fill: PROBLEM });
      }
    }
  }

  private drawAxis(): void {
    const y = TOP + LANE * this.data.workers;
    for (const [t, label] of ticks(this.v0, this.v1)) {
      const x = this.x(t);
      this.view.el('line', { x1: x, x2: x, y1: y, y2: y + 4, stroke: 'currentColor' });
      this.view.el(
        'text',
        { x, y: y + 15, 'text-anchor': 'middle', fill: 'currentColor', class: 'tick' },
        label
      );
    }
  }

  private drawLegend(): void {
    const { data } = this;
    const ly = TOP + LANE * data.workers + 38;
    const names = [...data.targets, 'failed / cancelled / timed out'];
    names.forEach((name, k) => {
      const lx = 76 + (k % 5) * 165;
      const y = ly + Math.floor(k / 5) * 18;
      const bad = k === data.targets.length;
      this.view.el('rect', {
        x: lx,
        y: y - 9,
        width: 12,
        height: 10,
        fill: bad ? 'none' : data.colours[k],
        stroke: bad ? PROBLEM : 'none',
        'stroke-width': 2,
        class: 'irpc-legend'
      });
      this.view.el('text', { x: lx + 16, y, fill: 'currentColor' }, bad ? name : short(name, 24));
    });
  }

  private describe(target: Element): string | null {
    const item = target.getAttribute('data-item');
    if (item !== null) {
      return this.itemCard(+item);
    }
    const cell = target.getAttribute('data-cell');
    if (cell !== null && this.columns) {
      return this.columnCard(+cell);
    }
    return null;
  }

  private itemCard(i: number): string {
    const { records: r, data } = this;
    const group = r.group[i];
    const outcome = data.outcomes[r.outcome[i]];
    const item = r.item[i];
    return [
      'target: ' + data.targets[r.target[i]],
      r.items[i] > 1
        ? `items: ${item}-${(item ?? 0) + r.items[i] - 1} (one bar: their own times are not known)`
        : 'item: ' + (item === null ? '-' : item),
      'worker: ' + r.worker[i],
      'queue wait: ' + duration(r.queueWait[i]),
      'run time: ' +
        duration(r.end[i] - r.start[i]) +
        (group > 1 ? ` (average of a group of ${group} short items)` : ''),
      `serialization: request ${duration(r.serialize[i])} + ${duration(r.deserialize[i])}, ` +
        `results ${duration(r.resultSerialize[i])}` +
        (r.requestItems[i] > 1 ? ` (for its chunk of ${r.requestItems[i]} items)` : ''),
      'outcome: ' +
        outcome +
        (group > 1 && outcome === 'timed out'
          ? ` (one of its group of ${group} ran when the caller gave up)`
          : '')
    ].join('\n');
  }

  private columnCard(cell: number): string {
    const columns = this.columns!;
    const bad = columns.bad[cell];
    const shares = columns.shares.get(cell) ?? [];
    const targets: string[] = [];
    shares.forEach((_, t) => targets.push(this.data.targets[t]));
    return (
      `${columns.items[cell]} item(s) in this column` +
      (bad ? `, ${bad} failed, cancelled or timed out` : '') +
      `\nbusy ${Math.round(Math.min(1, columns.busy[cell]) * 100)}% of it\n` +
      targets.join(', ')
    );
  }

  zoomTo(a: number, b: number): void {
    const finest = Math.min(FINEST_NS, this.full);
    if (b - a < finest) {
      const m = (a + b) / 2;
      a = m - finest / 2;
      b = m + finest / 2;
    }
    if (a < 0) {
      b -= a;
      a = 0;
    }
    if (b > this.full) {
      a = Math.max(0, a - (b - this.full));
      b = this.full;
    }
    this.v0 = a;
    this.v1 = b;
    this.draw();
  }

  private resetView(): void {
    this.zoomTo(0, this.full);
  }

  private listen(): void {
    const { view } = this;
    const svg = view.svg;
    svg.addEventListener(
      'wheel',
      ev => {
        ev.preventDefault();
        const px = Math.min(this.left + this.plot, Math.max(this.left, view.x(ev)));
        const t = this.timeAt(px);
        const f = ev.deltaY < 0 ? 0.8 : 1.25;
        this.zoomTo(t - (t - this.v0) * f, t + (this.v1 - t) * f);
      },
      { passive: false }
    );
    let drag: { x: number; v0: number; v1: number; zoom: boolean } | null = null;
    let selection: SVGElement | null = null;
    const move = (ev: MouseEvent) => {
      if (!drag) {
        return;
      }
      const px = view.x(ev);
      if (drag.zoom) {
        selection?.remove();
        const a = Math.max(this.left, Math.min(drag.x, px));
        const b = Math.min(this.left + this.plot, Math.max(drag.x, px));
        selection = view.el('rect', {
          x: a,
          y: TOP,
          width: Math.max(0, b - a),
          height: LANE * this.data.workers,
          class: 'irpc-selection'
        });
        return;
      }
      const dt = ((px - drag.x) / this.plot) * (drag.v1 - drag.v0);
      this.zoomTo(drag.v0 - dt, drag.v1 - dt);
    };
    const up = (ev: MouseEvent) => {
      window.removeEventListener('mousemove', move);
      window.removeEventListener('mouseup', up);
      if (!drag) {
        return;
      }
      const start = drag;
      drag = null;
      selection?.remove();
      selection = null;
      const px = view.x(ev);
      if (start.zoom && Math.abs(px - start.x) > 2) {
        this.zoomTo(this.timeAt(Math.min(start.x, px)), this.timeAt(Math.max(start.x, px)));
      }
    };
    svg.addEventListener('mousedown', ev => {
      if (ev.button !== 0) {
        return;
      }
      ev.preventDefault(); // no text selection while dragging
      drag = { x: view.x(ev), v0: this.v0, v1: this.v1, zoom: ev.shiftKey };
      // Only while a drag lasts: a notebook of many profiles keeps no
      // listener per timeline on the window.
      window.addEventListener('mousemove', move);
      window.addEventListener('mouseup', up);
    });
    svg.addEventListener('dblclick', () => this.resetView());
    view.reset.addEventListener('click', () => this.resetView());
  }
}
