/* The Workers panel's comm protocol (docs/workers-panel.md): the target, and
   the messages the kernel sends, checked before the panel reads them. */

export const WORKERS_TARGET = 'interp-rpc.workers';

/* The protocol version this panel reads. */
export const PROTOCOL_VERSION = 1;

export interface IWorkerRow {
  index: number;
  state: string;
  target: string | null;
  item: number | null;
  seconds: number;
  calls_done: number;
  detail: string | null;
}

export interface IWorkerGroup {
  process: { host: string; pid: number; address: string } | null;
  workers: IWorkerRow[];
}

export interface IMapProgress {
  target: string;
  done: number;
  total: number;
  seconds: number;
}

export interface IStatus {
  type: 'status';
  pool: { kind: string; workers: number; stuck_after: number; last_profile: boolean };
  totals: Record<string, number>;
  groups: IWorkerGroup[];
  map: IMapProgress | null;
}

export type KernelMessage =
  | IStatus
  | { type: 'no_pool'; message: string }
  | { type: 'stop_map'; stopped: boolean; message: string }
  | { type: 'profile'; data: Record<string, unknown> | null; message?: string }
  | { type: 'error'; message: string };

export class ProtocolError extends Error {}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/* The message, or a ProtocolError that names what is wrong with it. */
export function parseMessage(value: unknown): KernelMessage {
  if (!isObject(value)) {
    throw new ProtocolError('a message from the kernel is not a JSON object');
  }
  if (value.version !== PROTOCOL_VERSION) {
    throw new ProtocolError(
      `the kernel speaks version ${String(value.version)} of the Workers protocol; ` +
        `this panel reads version ${PROTOCOL_VERSION}: update interp-rpc`
    );
  }
  switch (value.type) {
    case 'status':
      if (!isObject(value.pool) || !isObject(value.totals) || !Array.isArray(value.groups)) {
        throw new ProtocolError('a status message lacks its pool, totals or groups');
      }
      for (const group of value.groups) {
        if (!isObject(group) || !Array.isArray(group.workers)) {
          throw new ProtocolError('a status message has a group without workers');
        }
      }
      return value as unknown as IStatus;
    case 'no_pool':
    case 'stop_map':
    case 'profile':
    case 'error':
      return value as unknown as KernelMessage;
    default:
      throw new ProtocolError(`unknown message type ${JSON.stringify(value.type)}`);
  }
}
