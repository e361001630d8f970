/* interp-rpc's JupyterLab MIME extension: the profile of a pool's run. */

import { IRenderMime } from '@jupyterlab/rendermime-interfaces';

import { MIME_TYPE } from './data';
import { ProfileRenderer } from './renderer';

export const rendererFactory: IRenderMime.IRendererFactory = {
  // Safe: it builds its DOM from data and runs nothing from the kernel, so
  // untrusted notebooks (executed elsewhere, reopened, shared) get it too.
  safe: true,
  mimeTypes: [MIME_TYPE],
  createRenderer: options => new ProfileRenderer(options.mimeType)
};

const extension: IRenderMime.IExtension = {
  id: 'interp-rpc:profile',
  description: 'The interactive profile of an interp-rpc pool run.',
  rendererFactory,
  // Ahead of the HTML fallback that the same output carries (rank 50).
  rank: 0,
  dataType: 'json'
};

export default extension;
