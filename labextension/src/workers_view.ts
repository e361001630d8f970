/* The Workers panel's body, drawn from a status message: the pool's totals,
   the running map's progress, and a table of workers per process. */

import { IMapProgress, IStatus, IWorkerGroup, IWorkerRow } from './workers_protocol';

/* The states always listed in the totals, in this order. */
const MAIN_STATES = ['busy', 'stuck', 'debugging', 'dead', 'idle'];

function element<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

export function seconds(value: number): string {
  return value >= 10 ? `${value.toFixed(1)} s` : `${value.toFixed(2)} s`;
}

function totals(status: IStatus): HTMLElement {
  const node = element('div', 'irpc-workers-totals');
  const kind = status.pool.workers === 1 ? 'worker' : 'workers';
  node.appendChild(
    element('span', 'irpc-workers-pool', `${status.pool.kind} · ${status.pool.workers} ${kind}`)
  );
  const states = [
    ...MAIN_STATES,
    ...Object.keys(status.totals).filter(s => !MAIN_STATES.includes(s))
  ];
  for (const state of states) {
    const count = status.totals[state] ?? 0;
    if (count === 0 && state !== 'idle' && state !== 'busy') {
      continue;
    }
    const chip = element('span', `irpc-workers-chip irpc-state-${state}`, `${count} ${state}`);
    chip.dataset.state = state;
    node.appendChild(chip);
  }
  return node;
}

function progress(map: IMapProgress): HTMLElement {
  const node = element('div', 'irpc-workers-map');
  const share = map.total > 0 ? Math.min(1, map.done / map.total) : 0;
  node.appendChild(
    element(
      'div',
      'irpc-workers-map-text',
      `${shortTarget(map.target)}: ${map.done} of ${map.total} items (${Math.round(share * 100)}%), ` +
        seconds(map.seconds)
    )
  );
  const bar = element('div', 'irpc-workers-bar');
  const fill = element('div', 'irpc-workers-bar-fill');
  fill.style.width = `${(share * 100).toFixed(1)}%`;
  bar.appendChild(fill);
  node.appendChild(bar);
  return node;
}

/* A notebook's own functions live in __main__: the name alone says it. */
function shortTarget(target: string): string {
  return target.startsWith('__main__.') ? target.slice('__main__.'.length) : target;
}

function row(worker: IWorkerRow): HTMLTableRowElement {
  const tr = element('tr', `irpc-worker irpc-state-${worker.state}`);
  tr.dataset.state = worker.state;
  const running = worker.target !== null && worker.state !== 'idle' && worker.state !== 'dead';
  const what = worker.state === 'dead' ? (worker.detail ?? '') : (worker.target ?? '');
  const cells = [
    String(worker.index),
    worker.state,
    shortTarget(what),
    worker.item === null ? '' : String(worker.item),
    running ? seconds(worker.seconds) : '',
    String(worker.calls_done)
  ];
  cells.forEach((text, column) => {
    const td = element('td', column === 1 ? 'irpc-worker-state' : '', text);
    if (column === 2) {
      td.className = 'irpc-worker-target';
      td.title = what; // the whole of it, where the column cuts it
    }
    tr.appendChild(td);
  });
  return tr;
}

function table(group: IWorkerGroup): HTMLElement {
  const box = element('div', 'irpc-workers-group');
  if (group.process) {
    const { host, pid, address } = group.process;
    box.appendChild(
      element('div', 'irpc-workers-process', `${host} · process ${pid} · dask worker ${address}`)
    );
  }
  const t = element('table', 'irpc-workers-table');
  const head = element('tr', '');
  for (const title of ['#', 'state', 'target', 'item', 'time', 'done']) {
    head.appendChild(element('th', '', title));
  }
  t.appendChild(element('thead', '')).appendChild(head);
  const body = element('tbody', '');
  for (const worker of group.workers) {
    body.appendChild(row(worker));
  }
  t.appendChild(body);
  box.appendChild(t);
  return box;
}

/* Replaces node's content with the status. */
export function renderStatus(node: HTMLElement, status: IStatus): void {
  const parts: HTMLElement[] = [totals(status)];
  if (status.map) {
    parts.push(progress(status.map));
  }
  for (const group of status.groups) {
    parts.push(table(group));
  }
  node.replaceChildren(...parts);
}
