/**
 * What every view page does: connect to the host, follow its theme, and draw each tool
 * result it is handed with the shared renderers.
 */
import {
  IContentBlock,
  imagesOf,
  IToolResult,
  viewDataOf,
  ViewData
} from '../render/types';
import { renderValue } from '../render/value';
import { HostConnection, IHostContext } from './connection';

const VERSION = '0.1.0';

function message(
  root: HTMLElement,
  text: string,
  className = 'jp-MCPView-note'
): void {
  const p = document.createElement('p');
  p.className = className;
  p.textContent = text;
  root.replaceChildren(p);
}

function applyTheme(context: IHostContext): void {
  const root = document.documentElement;
  if (context.theme) {
    root.dataset.theme = context.theme;
    root.style.colorScheme = context.theme;
  }
  for (const [name, value] of Object.entries(context.styles?.variables ?? {})) {
    // Only the host's design tokens (custom properties), and none that would load a picture.
    if (
      name.startsWith('--') &&
      typeof value === 'string' &&
      !/url\s*\(/i.test(value)
    ) {
      root.style.setProperty(name, value);
    }
  }
}

/** How a view draws the data its tools' results carry (and the results' pictures). */
export type ViewRenderer = (data: any, images: IContentBlock[]) => HTMLElement;

/** Start the page of the view `name`, drawing its data with `render`. */
export function startView(name: ViewData['view'], render: ViewRenderer): void {
  const root = document.getElementById('root') as HTMLElement;
  const host = new HostConnection({
    name: `jupyter-mcp ${name}`,
    version: VERSION
  });
  host.on('ui/notifications/host-context-changed', () =>
    applyTheme(host.hostContext)
  );
  host.on('ui/notifications/tool-input', () =>
    message(root, 'Waiting for the result…')
  );
  host.on('ui/notifications/tool-cancelled', params =>
    message(
      root,
      `The call was cancelled${params?.reason ? `: ${params.reason}` : ''}.`
    )
  );
  host.on('ui/notifications/tool-result', (result: IToolResult) => {
    const text = (result.content ?? [])
      .filter(block => block.type === 'text')
      .map(block => block.text ?? '')
      .join('\n');
    if (result.isError) {
      message(root, text || 'The tool failed.', 'jp-MCPView-error');
      return;
    }
    const data = viewDataOf(result);
    try {
      root.replaceChildren(
        data && data.view === name
          ? render(data, imagesOf(result))
          : renderValue(result.structuredContent ?? text)
      );
    } catch (error) {
      message(
        root,
        `This result could not be shown: ${error}`,
        'jp-MCPView-error'
      );
    }
  });
  host
    .connect()
    .catch(error =>
      message(root, `No host to talk to: ${error}`, 'jp-MCPView-error')
    );
}
