/* The icicle of the merged call graph: a card per box on hover, a click
   zooms to that box (its callees fill the width), "reset" or a double click
   shows everything. */

import { IIcicleData } from './data';
import { duration } from './format';
import { View } from './view';

const ROW = 18;

export class Icicle {
  private readonly view: View;
  /** The node zoomed to, or -1: all. */
  private focus = -1;

  constructor(
    host: HTMLElement,
    private readonly data: IIcicleData
  ) {
    const height = Math.max(ROW, data.depth * ROW);
    this.view = new View(host, data.width, height, target => this.describe(target));
    this.view.svg.classList.add('irpc-icicle');
    this.view.svg.addEventListener('click', ev => {
      const node = ev.target instanceof Element ? ev.target.getAttribute('data-node') : null;
      if (node !== null) {
        this.focus = +node;
        this.draw();
      }
    });
    this.view.svg.addEventListener('dblclick', () => this.resetView());
    this.view.reset.addEventListener('click', () => this.resetView());
    this.draw();
  }

  private resetView(): void {
    this.focus = -1;
    this.draw();
  }

  private draw(): void {
    const { view, data } = this;
    view.clear();
    const f0 = this.focus >= 0 ? data.x[this.focus] : 0;
    const fw = this.focus >= 0 ? data.w[this.focus] : 1;
    view.svg.setAttribute('data-view-start', String(f0));
    view.svg.setAttribute('data-view-end', String(f0 + fw));
    data.x.forEach((nx, n) => {
      const a = Math.max(nx, f0);
      const b = Math.min(nx + data.w[n], f0 + fw);
      if (b <= a) {
        return;
      }
      const bx = ((a - f0) / fw) * data.width;
      const bw = ((b - a) / fw) * data.width;
      if (bw < 0.5) {
        return;
      }
      const y = data.d[n] * ROW;
      view.el('rect', {
        x: bx,
        y,
        width: bw,
        height: ROW - 1,
        fill: data.colours[n % data.colours.length],
        'fill-opacity': 0.35,
        stroke: 'currentColor',
        'stroke-opacity': 0.3,
        'stroke-width': 0.5,
        'data-node': n,
        'data-name': data.name[n]
      });
      const chars = Math.floor((bw - 6) / 6.5);
      if (chars > 1) {
        const name = data.short[n];
        view.el(
          'text',
          { x: bx + 3, y: y + 13, fill: 'currentColor', 'pointer-events': 'none' },
          name.length > chars ? name.slice(0, chars - 1) + '…' : name
        );
      }
    });
    view.status.textContent =
      (this.focus >= 0 ? `zoomed to ${data.short[this.focus]}. ` : '') +
      'Hover: details, click: zoom to a function, double click: reset.';
  }

  private describe(target: Element): string | null {
    const node = target.getAttribute('data-node');
    if (node === null) {
      return null;
    }
    const n = +node;
    const { data } = this;
    return (
      `${data.name[n]}\ncalls: ${data.calls[n]}\ntotal time: ${duration(data.tt[n])}` +
      ` (in the function itself)\ncumulative time: ${duration(data.ct[n])}\n` +
      `${(100 * data.w[n]).toFixed(1)}% of the profiled time\nclick: zoom to it`
    );
  }
}
