/* A view: a toolbar (reset button, status line), an svg, and a hover card.

   The card's text comes from one delegated listener: the element under the
   pointer says, through `describe`, what its card reads. A timeline of
   thousands of bars then has one listener, not one per bar. */

const SVG_NS = 'http://www.w3.org/2000/svg';

export type Attributes = Record<string, string | number>;

export class View {
  readonly svg: SVGSVGElement;
  readonly reset: HTMLButtonElement;
  readonly status: HTMLSpanElement;
  private readonly wrap: HTMLDivElement;
  private readonly card: HTMLDivElement;

  constructor(
    host: HTMLElement,
    readonly width: number,
    height: number,
    describe: (target: Element) => string | null
  ) {
    const bar = document.createElement('div');
    this.reset = document.createElement('button');
    this.reset.className = 'irpc-reset';
    this.reset.textContent = 'reset zoom';
    this.status = document.createElement('span');
    this.status.className = 'irpc-range';
    bar.append(this.reset, this.status);
    this.svg = document.createElementNS(SVG_NS, 'svg');
    this.size(height);
    this.svg.setAttribute('font-size', '11');
    this.svg.setAttribute('font-family', 'sans-serif');
    this.wrap = document.createElement('div');
    this.wrap.className = 'irpc-wrap';
    this.card = document.createElement('div');
    this.card.className = 'irpc-card';
    this.card.hidden = true;
    this.wrap.append(this.svg, this.card);
    host.append(bar, this.wrap);
    this.svg.addEventListener('mousemove', ev => {
      const text = ev.target instanceof Element ? describe(ev.target) : null;
      if (text === null) {
        this.hide();
      } else {
        this.show(text, ev);
      }
    });
    this.svg.addEventListener('mouseleave', () => this.hide());
  }

  size(height: number): void {
    this.svg.setAttribute('width', String(this.width));
    this.svg.setAttribute('height', String(height));
    this.svg.setAttribute('viewBox', `0 0 ${this.width} ${height}`);
  }

  el(name: string, attributes: Attributes, text?: string): SVGElement {
    const e = document.createElementNS(SVG_NS, name);
    for (const key in attributes) {
      e.setAttribute(key, String(attributes[key]));
    }
    if (text !== undefined) {
      e.textContent = text;
    }
    this.svg.appendChild(e);
    return e;
  }

  clear(): void {
    this.svg.replaceChildren();
    this.hide();
  }

  /** The pointer's x in svg units (the svg may be scaled down to fit). */
  x(ev: MouseEvent): number {
    const box = this.svg.getBoundingClientRect();
    return ((ev.clientX - box.left) * this.width) / (box.width || 1);
  }

  hide(): void {
    this.card.hidden = true;
  }

  private show(text: string, ev: MouseEvent): void {
    const box = this.wrap.getBoundingClientRect();
    this.card.textContent = text;
    this.card.hidden = false;
    // Beside the pointer, on the side where it fits in the output.
    let left = ev.clientX - box.left + 12;
    if (left + this.card.offsetWidth > box.width) {
      left = Math.max(0, left - this.card.offsetWidth - 24);
    }
    this.card.style.left = left + 'px';
    this.card.style.top = ev.clientY - box.top + 12 + 'px';
  }
}
