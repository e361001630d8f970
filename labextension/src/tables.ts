/* The profile's tables: the summary, the slowest items, and the function
   profile's table, which sorts on a header click. */

import { IFunctionsData, ITableData } from './data';

function cell(tag: 'td' | 'th', text: string, left = false): HTMLTableCellElement {
  const c = document.createElement(tag);
  c.textContent = text;
  if (left) {
    c.style.textAlign = 'left';
  }
  return c;
}

/** Key-value rows: the profile's summary. */
export function summary(rows: [string, string][]): HTMLTableElement {
  const table = document.createElement('table');
  table.className = 'irpc-summary';
  for (const [key, value] of rows) {
    const tr = table.insertRow();
    tr.append(cell('th', key, true), cell('td', value, true));
  }
  return table;
}

/** A table with a caption and a header row. */
export function captioned(
  caption: string,
  data: ITableData,
  className: string
): HTMLTableElement {
  const table = document.createElement('table');
  table.className = className;
  const title = table.createCaption();
  title.style.textAlign = 'left';
  const bold = document.createElement('b');
  bold.textContent = caption;
  title.appendChild(bold);
  const head = table.createTHead().insertRow();
  head.append(...data.headers.map(h => cell('th', h)));
  const body = table.createTBody();
  for (const row of data.rows) {
    body.insertRow().append(...row.map((v, k) => cell('td', v, k === 0)));
  }
  return table;
}

function number(value: string | number, digits: number): string {
  return typeof value === 'number'
    ? digits
      ? value.toFixed(digits)
      : value.toLocaleString('en-US')
    : value;
}

/** The function profile's table: calls, total and cumulative time summed
 * over workers, then per worker; a header click sorts by that column. */
export function functionTable(data: IFunctionsData): HTMLTableElement {
  const table = document.createElement('table');
  table.className = 'irpc-sortable';
  const head = table.createTHead().insertRow();
  data.headers.forEach((h, k) => {
    const th = cell('th', h);
    th.setAttribute('data-col', String(k));
    head.appendChild(th);
  });
  const body = table.createTBody();
  for (const row of data.rows) {
    const tr = body.insertRow();
    row.forEach((value, k) => {
      // Columns after the name come in threes: calls, tottime, cumtime.
      const td = cell('td', number(value, k === 0 || (k - 1) % 3 === 0 ? 0 : 4), k === 0);
      td.setAttribute('data-v', String(value));
      tr.appendChild(td);
    });
  }
  head.addEventListener('click', ev => {
    const th = ev.target instanceof Element ? ev.target.closest('th[data-col]') : null;
    if (th) {
      sort(table, th);
    }
  });
  return table;
}

function sort(table: HTMLTableElement, th: Element): void {
  const col = +th.getAttribute('data-col')!;
  const down = th.getAttribute('data-dir') !== 'desc';
  th.setAttribute('data-dir', down ? 'desc' : 'asc');
  const body = table.tBodies[0];
  const rows = Array.from(body.rows);
  rows.sort((a, b) => {
    const x = a.cells[col].getAttribute('data-v') ?? '';
    const y = b.cells[col].getAttribute('data-v') ?? '';
    const nx = parseFloat(x);
    const ny = parseFloat(y);
    const c = isNaN(nx) || isNaN(ny) ? x.localeCompare(y) : nx - ny;
    return down ? -c : c;
  });
  body.append(...rows);
}
