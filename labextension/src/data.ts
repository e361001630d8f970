/* The profile's MIME data, as interp_rpc/display/profile_mime.py writes it,
   and its decoding into typed arrays the views index quickly.

   Records travel in columns (one array per field); a field that has the
   same value for every record travels as that one number. Times are in ns;
   a record's start (`s`) is the difference from the previous record's start
   (the first one's from the profile's start), and `d` is its duration. */

export const MIME_TYPE = 'application/vnd.interp-rpc.profile+json';
/** The format this renderer reads; the Python side writes it in `version`. */
export const FORMAT_VERSION = 1;

/** A column: one value per record, or one value for all of them. */
export type Column = number[] | number;

export interface ITimelineData {
  workers: number;
  span: number;
  count: number;
  targets: string[];
  laneLabels: string[];
  left: number;
  colours: string[];
  outcomes: string[];
  problems: number[];
  aggregateAbove: number;
  truncated: number;
  w: Column;
  s: Column;
  d: Column;
  t: Column;
  o: Column;
  i: (number | null)[] | number | null;
  n: Column;
  g: Column;
  q: Column;
  ri: Column;
  ser: Column;
  de: Column;
  rs: Column;
}

export interface IIcicleData {
  width: number;
  depth: number;
  colours: string[];
  name: string[];
  short: string[];
  d: number[];
  x: number[];
  w: number[];
  calls: number[];
  tt: number[];
  ct: number[];
}

export interface IFunctionsData {
  headers: string[];
  rows: (string | number)[][];
  icicle: IIcicleData | null;
}

export interface ITableData {
  headers: string[];
  rows: string[][];
}

export interface IProfileData {
  version: number;
  warnings: string[];
  summary: [string, string][];
  slowest: ITableData | null;
  timeline: ITimelineData | null;
  functions: IFunctionsData | null;
}

/** The timeline's records, one typed array per field. */
export interface IRecords {
  count: number;
  worker: Int32Array;
  start: Float64Array;
  end: Float64Array;
  target: Int32Array;
  outcome: Int32Array;
  item: (number | null)[];
  items: Int32Array;
  group: Int32Array;
  queueWait: Float64Array;
  requestItems: Int32Array;
  serialize: Float64Array;
  deserialize: Float64Array;
  resultSerialize: Float64Array;
}

/** Why some data cannot be drawn: the renderer shows the message. */
export class ProfileFormatError extends Error {}

function fill<T extends Int32Array | Float64Array>(array: T, column: Column, name: string): T {
  if (typeof column === 'number') {
    array.fill(column);
    return array;
  }
  if (!Array.isArray(column) || column.length !== array.length) {
    throw new ProfileFormatError(
      `the timeline's column '${name}' has ${Array.isArray(column) ? column.length : 'no'} ` +
        `values for ${array.length} records`
    );
  }
  array.set(column);
  return array;
}

export function records(data: ITimelineData): IRecords {
  const count = data.count;
  const int = (column: Column, name: string) => fill(new Int32Array(count), column, name);
  const real = (column: Column, name: string) => fill(new Float64Array(count), column, name);
  const start = real(data.s, 's');
  for (let k = 1; k < count; k++) {
    start[k] += start[k - 1];
  }
  const end = real(data.d, 'd');
  for (let k = 0; k < count; k++) {
    end[k] += start[k];
  }
  let item: (number | null)[];
  if (Array.isArray(data.i)) {
    item = data.i;
  } else {
    item = new Array(count).fill(data.i);
  }
  return {
    count,
    worker: int(data.w, 'w'),
    start,
    end,
    target: int(data.t, 't'),
    outcome: int(data.o, 'o'),
    item,
    items: int(data.n, 'n'),
    group: int(data.g, 'g'),
    queueWait: real(data.q, 'q'),
    requestItems: int(data.ri, 'ri'),
    serialize: real(data.ser, 'ser'),
    deserialize: real(data.de, 'de'),
    resultSerialize: real(data.rs, 'rs')
  };
}

/** The data of a MIME bundle, checked: a clear error names what is wrong. */
export function profileData(value: unknown): IProfileData {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ProfileFormatError('the profile data is not an object');
  }
  const data = value as Partial<IProfileData>;
  if (data.version !== FORMAT_VERSION) {
    throw new ProfileFormatError(
      `this profile is in format ${JSON.stringify(data.version)}, and this extension reads ` +
        `format ${FORMAT_VERSION}: update interp-rpc on both sides`
    );
  }
  return {
    version: data.version,
    warnings: data.warnings ?? [],
    summary: data.summary ?? [],
    slowest: data.slowest ?? null,
    timeline: data.timeline ?? null,
    functions: data.functions ?? null
  };
}
