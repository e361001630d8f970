/* Times and ticks as the profile's text shows them. */

/** A duration in ns, in the unit that reads best. */
export function duration(ns: number): string {
  if (ns >= 1e9) {
    return (ns / 1e9).toFixed(2) + ' s';
  }
  if (ns >= 1e6) {
    return (ns / 1e6).toFixed(2) + ' ms';
  }
  return (ns / 1e3).toFixed(1) + ' µs';
}

/** Round time ticks (ns, label) over [v0, v1]: about eight of them. */
export function ticks(v0: number, v1: number): [number, string][] {
  const raw = (v1 - v0) / 8;
  let step = 1;
  while (step * 10 <= raw) {
    step *= 10;
  }
  for (const m of [1, 2, 5, 10]) {
    if (step * m >= raw) {
      step *= m;
      break;
    }
  }
  const [unit, div]: [string, number] =
    step >= 1e8 ? ['s', 1e9] : step >= 1e5 ? ['ms', 1e6] : ['µs', 1e3];
  const out: [number, string][] = [];
  for (let k = Math.ceil(v0 / step); k * step <= v1; k++) {
    const t = k * step;
    out.push([t, +(t / div).toPrecision(6) + ' ' + unit]);
  }
  return out;
}

/** `text`, cut to `n` characters with an ellipsis. */
export function short(text: string, n: number): string {
  return text.length > n ? text.slice(0, n - 1) + '…' : text;
}
