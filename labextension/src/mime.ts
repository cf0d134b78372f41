/**
 * Tool results in notebooks: the renderer of `application/vnd.jupyter-mcp.result+json`, the
 * MIME type the IPython extension (`%load_ext jupyter_mcp`) displays its results with.
 *
 * It draws with the same code as the MCP Apps views (`render/`), through JupyterLab's own
 * sanitizer, so it is safe for untrusted notebooks too; other frontends show the result's
 * `text/html` or `text/plain` instead.
 */
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { IResultBundle, renderResult } from './render/result';

/** The MIME type of a tool result. */
export const MIME_TYPE = 'application/vnd.jupyter-mcp.result+json';

/** One rendered tool result. */
class ResultRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(options: IRenderMime.IRendererOptions) {
    super();
    this._sanitizer = options.sanitizer;
    this.addClass('jp-MCPView-rendered');
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const bundle = model.data[MIME_TYPE] as unknown as IResultBundle;
    this.node.replaceChildren(renderResult(bundle, this._sanitizer));
    return Promise.resolve();
  }

  private _sanitizer: IRenderMime.ISanitizer;
}

/** Makes the renderers; safe: everything it shows is sanitized, nothing from outside loads. */
export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [MIME_TYPE],
  createRenderer: options => new ResultRenderer(options)
};

const extension: IRenderMime.IExtension = {
  id: 'jupyter-mcp:result-renderer',
  description:
    'Shows jupyter-mcp tool results (the IPython extension) as tables, diffs and outputs.',
  rendererFactory,
  // Before text/html and text/plain, the fallbacks the same output carries.
  rank: 10,
  dataType: 'json'
};

export default extension;
