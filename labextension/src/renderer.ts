/* The profile's MIME renderer: the timeline, the summary, the slowest items
   and the function profile, drawn from the profile's data (no HTML from the
   kernel, no script in the output), so it works in untrusted notebooks. */

import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { MIME_TYPE, profileData, ProfileFormatError } from './data';
import { Icicle } from './icicle';
import { captioned, functionTable, summary } from './tables';
import { Timeline } from './timeline';

export class ProfileRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(private readonly mimeType: string = MIME_TYPE) {
    super();
    this.addClass('irpc-mime-output');
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    // Inside the output's node, as the HTML fallback's: the same selectors
    // find either one.
    const node = document.createElement('div');
    node.className = 'interp-rpc-profile irpc-mime';
    this.node.replaceChildren(node);
    const started = performance.now();
    try {
      this.render(model.data[this.mimeType], node);
      // What building the whole view cost in script time (ms): the bench reads it.
      node.setAttribute('data-render-ms', (performance.now() - started).toFixed(1));
    } catch (error) {
      if (!(error instanceof ProfileFormatError)) {
        throw error;
      }
      const message = document.createElement('p');
      message.className = 'irpc-warning';
      message.textContent = `Cannot draw this profile: ${error.message}.`;
      node.replaceChildren(message);
    }
    return Promise.resolve();
  }

  private render(value: unknown, node: HTMLElement): void {
    const data = profileData(value);
    for (const text of data.warnings) {
      const p = document.createElement('p');
      p.className = 'irpc-warning';
      const label = document.createElement('b');
      label.textContent = 'Warning:';
      p.append(label, ' ' + text);
      node.appendChild(p);
    }
    if (data.timeline) {
      const host = document.createElement('div');
      host.className = 'irpc-live';
      node.appendChild(host);
      new Timeline(host, data.timeline);
    }
    if (data.summary.length) {
      node.appendChild(summary(data.summary));
    }
    if (data.slowest) {
      node.appendChild(captioned('slowest items', data.slowest, 'irpc-slowest'));
    }
    if (data.functions) {
      const box = document.createElement('div');
      box.className = 'irpc-functions';
      const title = document.createElement('b');
      title.textContent = 'Functions, across all workers';
      const scroll = document.createElement('div');
      scroll.className = 'irpc-scroll';
      scroll.appendChild(functionTable(data.functions));
      box.append(title, ' (seconds; click a header to sort)', scroll);
      if (data.functions.icicle) {
        const heading = document.createElement('b');
        heading.textContent = 'Icicle of the merged call graph';
        const host = document.createElement('div');
        host.className = 'irpc-icicle-live';
        box.append(heading, ' (width: cumulative time)', host);
        new Icicle(host, data.functions.icicle);
      }
      node.appendChild(box);
    }
  }
}
