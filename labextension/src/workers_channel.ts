/* Where the Workers panel's comm messages go, and who sends them.

   JupyterLab 4.4 sends a comm's messages to a kernel subshell that it makes
   once per kernel and comm target, and forgets only when this page restarts
   the kernel. After a restart made elsewhere (another tab, a script), that
   subshell does not exist in the new kernel process: the interp-rpc kernel
   refuses the panel's buttons, and ipykernel ignores them. So the panel
   sends its comm's messages itself, to a subshell that the kernel lists:
   its own if it made one, JupyterLab's if the kernel has it, else a new one
   of its own, deleted when the panel leaves. It checks before each message,
   since a restart made elsewhere is told to nobody. The comm object still
   receives what the kernel sends. */

import { CommsOverSubshells, Kernel, KernelMessage } from '@jupyterlab/services';
import type { JSONObject } from '@lumino/coreutils';

/* What the panel needs of JupyterLab's comm besides Kernel.IComm: the
   subshell JupyterLab chose for it, once chosen (services 7.4 has both on
   its comm class; without them the panel makes its own subshell). */
interface ISubshellComm {
  readonly subshellId?: string | null;
  readonly subshellStarted?: Promise<void>;
}

/* How long the panel waits for JupyterLab to choose its comm's subshell
   before it makes its own: JupyterLab's choice never settles when its
   create request failed. */
const JUPYTERLAB_CHOICE_SECONDS = 5;

export class WorkersChannel {
  /* The subshell this channel made, to delete when it closes. */
  private own: string | null = null;
  private closed = false;

  constructor(
    private readonly kernel: Kernel.IKernelConnection,
    private readonly comm: Kernel.IComm
  ) {}

  /* comm_open for the panel's target, on the main shell, as JupyterLab
     sends it: the interp-rpc kernel starts IPython, which registers the
     target, on its main thread, when a comm_open comes before the first
     cell (as after a restart); a subshell would find no target yet. */
  async open(): Promise<void> {
    await this.send('comm_open', { target_name: this.comm.targetName, data: {} }, null);
  }

  /* A comm_msg; a closed channel sends nothing. */
  async request(data: JSONObject): Promise<void> {
    await this.send('comm_msg', { data });
  }

  /* comm_close, then the subshell this channel made, if any, is deleted;
     the comm object is let go without sending anything of its own. */
  close(): void {
    if (this.closed) {
      return;
    }
    const sent = this.send('comm_close', { data: {} });
    this.closed = true;
    this.comm.dispose();
    // The subshell goes once it has served the close; a kernel that is gone
    // took both with it.
    sent.then(
      () => this.deleteOwn(),
      () => undefined
    );
  }

  /* The kernel closed the comm (it has no such target): nothing to send. */
  closedByKernel(): void {
    this.closed = true;
    void this.deleteOwn();
  }

  /* Sends to ``to``, or else to the subshell that subshell() finds. */
  private async send(
    msgType: 'comm_open' | 'comm_msg' | 'comm_close',
    content: JSONObject,
    to?: string | null
  ): Promise<void> {
    if (this.closed) {
      return;
    }
    const subshellId = to === undefined ? await this.subshell() : to;
    if (this.kernel.isDisposed || (this.closed && msgType !== 'comm_close')) {
      return;
    }
    const msg = KernelMessage.createMessage({
      msgType,
      channel: 'shell',
      username: this.kernel.username,
      session: this.kernel.clientId,
      subshellId,
      content: { comm_id: this.comm.commId, ...content }
      // Typed as one of the three: createMessage's overloads take one type.
    } as KernelMessage.IOptions<KernelMessage.ICommMsgMsg<'shell'>>);
    // Comm messages have no reply: the future is done at the kernel's idle.
    await this.kernel.sendShellMessage(msg, false, true).done;
  }

  /* The subshell to send to now (null: the main shell, for a kernel without
     subshells or a user who turned comms over subshells off). */
  private async subshell(): Promise<string | null> {
    const kernel = this.kernel;
    await kernel.info;
    if (!kernel.supportsSubshells || kernel.commsOverSubshells === CommsOverSubshells.Disabled) {
      return null;
    }
    const listed = (await kernel.requestListSubshell({}).done).content.subshell_id;
    if (this.own !== null && listed.includes(this.own)) {
      return this.own;
    }
    const theirs = await this.jupyterLabsSubshell();
    if (theirs !== null && listed.includes(theirs)) {
      return theirs;
    }
    // An error reply (the kernel could not start the subshell's thread) has
    // no id: the main shell then serves the panel, after the running cell.
    const created: unknown = (await kernel.requestCreateSubshell({}).done).content.subshell_id;
    this.own = typeof created === 'string' ? created : null;
    return this.own;
  }

  private async jupyterLabsSubshell(): Promise<string | null> {
    const comm = this.comm as Kernel.IComm & ISubshellComm;
    if (comm.subshellStarted === undefined) {
      return null;
    }
    const gaveUp = new Promise<void>(resolve =>
      window.setTimeout(resolve, JUPYTERLAB_CHOICE_SECONDS * 1000)
    );
    await Promise.race([comm.subshellStarted, gaveUp]);
    return comm.subshellId ?? null;
  }

  private async deleteOwn(): Promise<void> {
    const own = this.own;
    this.own = null;
    if (own === null || this.kernel.isDisposed || this.kernel.status === 'dead') {
      return;
    }
    try {
      await this.kernel.requestDeleteSubshell({ subshell_id: own }).done;
    } catch {
      // The kernel that had it is gone: so is the subshell.
    }
  }
}
