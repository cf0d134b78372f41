/**
 * The JupyterLab side of jupyter-mcp.
 *
 * For now the plugin only announces itself; the browser bridge (editor state,
 * approvals) lives in further modules of this folder.
 */
import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';

/**
 * The jupyter-mcp plugin.
 */
const plugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-mcp:plugin',
  description: 'Connects JupyterLab to the jupyter-mcp server extension.',
  autoStart: true,
  activate: (app: JupyterFrontEnd): void => {
    console.log('jupyter-mcp: JupyterLab extension activated');
  }
};

export default plugin;
