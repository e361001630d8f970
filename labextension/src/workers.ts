/* The Workers panel: the pool of the active notebook's kernel, live, in
   JupyterLab's left side bar. It talks to the kernel over the comm target
   interp-rpc.workers (docs/workers-panel.md). Its requests go to a kernel
   subshell (workers_channel.ts), so its buttons work while a cell blocks
   the main shell; the updates come on IOPub. */

import { ILabShell, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { LabIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

import { MIME_TYPE } from './data';
import { ProfileRenderer } from './renderer';
import { WorkersChannel } from './workers_channel';
import {
  KernelMessage as PanelMessage,
  parseMessage,
  ProtocolError,
  WORKERS_TARGET
} from './workers_protocol';
import { renderStatus } from './workers_view';

const ICON = new LabIcon({
  name: 'interp-rpc:workers',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><g class="jp-icon3" ' +
    'fill="#616161"><rect x="3" y="4" width="18" height="3" rx="1"/>' +
    '<rect x="3" y="10.5" width="12" height="3" rx="1"/>' +
    '<rect x="3" y="17" width="15" height="3" rx="1"/></g></svg>'
});

/* Kernel statuses after which a comm the kernel refused is tried again:
   the user may have run %load_ext interp_rpc meanwhile. */
const RETRY_AFTER_SECONDS = 2;

/* While the kernel has a pool it sends a status at least every 5 s (its
   heartbeat): this long a silence, two heartbeats missed, means the kernel
   that served the comm is gone, e.g. restarted by another tab or a script,
   which this page's kernel connection is not told about. A false alarm only
   opens the comm again. */
const SILENCE_SECONDS = 10;

/* How often the silence is checked. */
const WATCHDOG_SECONDS = 1;

function now(): number {
  return performance.now() / 1000;
}

export class WorkersPanel extends Widget {
  private readonly note: HTMLElement;
  private readonly body: HTMLElement;
  private readonly stopButton: HTMLButtonElement;
  private readonly profileButton: HTMLButtonElement;
  private notebook: NotebookPanel | null = null;
  private kernel: Kernel.IKernelConnection | null = null;
  private comm: Kernel.IComm | null = null;
  private channel: WorkersChannel | null = null; // sends the comm's messages
  private refusedAt = 0; // when the kernel last closed the comm at once (no target)
  /* The session of the kernel process that serves the comm, from its status
     messages: a restart starts a process with a new session, whoever asked
     for it. */
  private kernelSession: string | null = null;
  /* When the comm last heard a status, while a pool heartbeats; null when no
     heartbeat is due (no pool, or not answered yet). */
  private heardAt: number | null = null;
  private watchdog: number | null = null;

  constructor(private readonly openProfile: (data: Record<string, unknown>) => void) {
    super();
    this.id = 'interp-rpc-workers';
    this.addClass('irpc-workers-panel');
    this.title.icon = ICON;
    this.title.caption = 'Workers (interp-rpc)';
    const heading = document.createElement('h2');
    heading.className = 'irpc-workers-heading';
    heading.textContent = 'Workers';
    const buttons = document.createElement('div');
    buttons.className = 'irpc-workers-buttons';
    this.stopButton = this.button('Stop the map', 'irpc-workers-stop', () =>
      this.request('stop_map')
    );
    this.profileButton = this.button('Open the last profile', 'irpc-workers-profile', () =>
      this.request('open_profile')
    );
    buttons.append(this.stopButton, this.profileButton);
    this.note = document.createElement('p');
    this.note.className = 'irpc-workers-note';
    this.body = document.createElement('div');
    this.body.className = 'irpc-workers-body';
    this.node.append(heading, buttons, this.note, this.body);
    this.showNote('No notebook is active.');
  }

  private button(label: string, className: string, onClick: () => void): HTMLButtonElement {
    const button = document.createElement('button');
    button.className = `jp-Button jp-mod-styled jp-mod-reject ${className}`;
    button.textContent = label;
    button.disabled = true;
    button.addEventListener('click', onClick);
    return button;
  }

  private showNote(text: string): void {
    this.note.textContent = text;
    this.note.hidden = text === '';
  }

  /* Follows this notebook's kernel (null: no notebook is active). */
  follow(notebook: NotebookPanel | null): void {
    if (notebook === this.notebook) {
      return;
    }
    this.notebook?.sessionContext.kernelChanged.disconnect(this.onKernelChanged, this);
    this.notebook?.sessionContext.statusChanged.disconnect(this.onStatusChanged, this);
    this.notebook = notebook;
    notebook?.sessionContext.kernelChanged.connect(this.onKernelChanged, this);
    notebook?.sessionContext.statusChanged.connect(this.onStatusChanged, this);
    this.connect(notebook?.sessionContext.session?.kernel ?? null);
    if (!notebook) {
      this.showNote('No notebook is active.');
    }
  }

  private onKernelChanged(): void {
    this.connect(this.notebook?.sessionContext.session?.kernel ?? null);
  }

  private onStatusChanged(_: unknown, status: Kernel.Status): void {
    if (status === 'restarting' || status === 'autorestarting' || status === 'dead') {
      this.disconnect();
      this.kernelSession = null; // the next kernel process's status sets it
      this.body.replaceChildren();
      this.showNote('The kernel is restarting.');
    } else if (status === 'idle' && this.kernel && !this.comm) {
      // After a restart, or once the extension may have been loaded.
      if (now() - this.refusedAt >= RETRY_AFTER_SECONDS) {
        this.openComm(this.kernel);
      }
    }
  }

  private connect(kernel: Kernel.IKernelConnection | null): void {
    this.disconnect();
    this.kernel?.iopubMessage.disconnect(this.onIopub, this);
    this.kernel = kernel;
    this.kernelSession = null;
    kernel?.iopubMessage.connect(this.onIopub, this);
    this.body.replaceChildren();
    if (!kernel) {
      this.showNote(this.notebook ? 'The notebook has no kernel.' : 'No notebook is active.');
      return;
    }
    this.openComm(kernel);
  }

  /* A status from another kernel process than the one serving the comm:
     the kernel was restarted without this page asking (its status signals
     only tell of restarts asked from here). Open the comm on the new one. */
  private onIopub(kernel: Kernel.IKernelConnection, msg: KernelMessage.IIOPubMessage): void {
    if (msg.header.msg_type !== 'status' || kernel !== this.kernel) {
      return;
    }
    const session = msg.header.session;
    if (this.kernelSession === null || !this.comm) {
      this.kernelSession = session;
    } else if (session !== this.kernelSession) {
      this.kernelSession = session;
      this.reopen('a status came from another kernel process');
    }
  }

  /* The comm again, on the same kernel connection, as after a restart;
     ``why`` goes to the browser's console, for whoever wonders why a
     button's answer never came. */
  private reopen(why: string): void {
    console.debug(`interp-rpc Workers panel: opening its comm again: ${why}`);
    const kernel = this.kernel;
    this.disconnect();
    this.body.replaceChildren();
    if (kernel) {
      this.openComm(kernel);
    }
  }

  private checkSilence(): void {
    if (this.comm && this.heardAt !== null && now() - this.heardAt > SILENCE_SECONDS) {
      // Which process serves the new comm: the next status says.
      this.kernelSession = null;
      this.reopen(`no status for ${SILENCE_SECONDS} s`);
    }
  }

  private openComm(kernel: Kernel.IKernelConnection): void {
    if (kernel.isDisposed || kernel.status === 'dead') {
      return;
    }
    this.showNote('Asking the kernel for its pool…');
    const comm = kernel.createComm(WORKERS_TARGET);
    const channel = new WorkersChannel(kernel, comm);
    const openedAt = now();
    this.comm = comm;
    this.channel = channel;
    this.heardAt = null;
    this.watchdog ??= window.setInterval(() => this.checkSilence(), WATCHDOG_SECONDS * 1000);
    comm.onMsg = (msg: KernelMessage.ICommMsgMsg) => {
      if (this.comm === comm) {
        this.receive(msg.content.data);
      } else {
        const what = JSON.stringify(msg.content.data).slice(0, 60);
        console.debug(`interp-rpc Workers panel: a message on a comm it has left: ${what}`);
      }
    };
    comm.onClose = () => {
      channel.closedByKernel();
      if (this.comm !== comm) {
        return;
      }
      this.comm = null;
      this.channel = null;
      this.heardAt = null;
      this.setButtons(false, false);
      if (now() - openedAt < 5) {
        this.refusedAt = now();
      }
      this.body.replaceChildren();
      this.showNote(
        'This kernel does not serve the Workers panel: use the "Python (interp-rpc)" ' +
          'kernel, or run %load_ext interp_rpc.'
      );
    };
    channel.open().catch(error => this.unreachable(channel, error));
  }

  private unreachable(channel: WorkersChannel, error: unknown): void {
    if (this.channel === channel) {
      this.showNote(`Could not reach the kernel: ${String(error)}`);
    }
  }

  private disconnect(): void {
    const channel = this.channel;
    this.comm = null;
    this.channel = null;
    this.heardAt = null;
    if (this.watchdog !== null) {
      window.clearInterval(this.watchdog);
      this.watchdog = null;
    }
    this.setButtons(false, false);
    channel?.close();
  }

  private request(action: string): void {
    const channel = this.channel;
    channel?.request({ action }).catch(error => this.unreachable(channel, error));
  }

  private setButtons(mapRuns: boolean, hasProfile: boolean): void {
    this.stopButton.disabled = !mapRuns;
    this.profileButton.disabled = !hasProfile;
  }

  private receive(data: unknown): void {
    let message: PanelMessage;
    try {
      message = parseMessage(data);
    } catch (error) {
      if (error instanceof ProtocolError) {
        this.showNote(`Cannot read the kernel's message: ${error.message}.`);
        return;
      }
      throw error;
    }
    switch (message.type) {
      case 'status':
        this.heardAt = now();
        this.showNote('');
        renderStatus(this.body, message);
        this.setButtons(message.map !== null, message.pool.last_profile);
        break;
      case 'no_pool':
        this.heardAt = null; // no heartbeat without a pool
        this.body.replaceChildren();
        this.setButtons(false, false);
        this.showNote(message.message);
        break;
      case 'stop_map':
      case 'error':
        this.showNote(message.message);
        break;
      case 'profile':
        if (message.data) {
          this.openProfile(message.data);
        } else {
          this.showNote(message.message ?? 'No profile yet.');
        }
        break;
    }
  }

  dispose(): void {
    this.follow(null);
    super.dispose();
  }
}

/* A profile in the main area, drawn by the profile's MIME renderer. */
function profileWidget(data: Record<string, unknown>): Widget {
  const renderer = new ProfileRenderer(MIME_TYPE);
  renderer.id = `interp-rpc-profile-${Date.now()}`;
  renderer.title.label = 'Profile (interp-rpc)';
  renderer.title.icon = ICON;
  renderer.title.closable = true;
  renderer.addClass('irpc-profile-tab');
  void renderer.renderModel({
    trusted: false,
    data: data as never,
    metadata: {},
    setData: () => undefined
  });
  return renderer;
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'interp-rpc:workers',
  description: "The Workers panel: the active notebook's pool, live.",
  autoStart: true,
  requires: [ILabShell, INotebookTracker],
  activate: (_: JupyterFrontEnd, shell: ILabShell, notebooks: INotebookTracker) => {
    const panel = new WorkersPanel(data => {
      const widget = profileWidget(data);
      shell.add(widget, 'main');
      shell.activateById(widget.id);
    });
    shell.add(panel, 'left', { rank: 900 });
    panel.follow(notebooks.currentWidget);
    notebooks.currentChanged.connect((_, notebook) => panel.follow(notebook));
  }
};

export default plugin;
