/**
 * The JupyterLab side of jupyter-mcp.
 *
 * One plugin keeps this window linked to the server (`connection.ts`), reports and edits the
 * active editor (`editor.ts`), lists and runs commands (`actions.ts`), asks for approvals
 * (`dialogs.ts`), shows what agents do and which clients are allowed with OAuth (`activity.ts`,
 * `grants.ts`), mirrors breakpoints in the debugger (`breakpoints.ts`) and reports the changes
 * of the documents it shows (`changes.ts`).
 */
import {
  ILabShell,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { IDebugger } from '@jupyterlab/debugger';
import { IEditorTracker } from '@jupyterlab/fileeditor';
import { INotebookTracker } from '@jupyterlab/notebook';
import { IStatusBar } from '@jupyterlab/statusbar';

import { commandHandlers } from './actions';
import { ActivityPanel, MCPStatus } from './activity';
import { BreakpointSync } from './breakpoints';
import { DocumentChanges } from './changes';
import { LabSocket } from './connection';
import { Approvals } from './dialogs';
import { ActiveEditor } from './editor';
import { LiveNotebooks } from './notebooks';

/**
 * Command ids of the plugin.
 */
namespace CommandIDs {
  export const showActivity = 'jupyter-mcp:show-activity';
}

/**
 * The jupyter-mcp plugin.
 */
const plugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-mcp:plugin',
  description: 'Connects JupyterLab to the jupyter-mcp server extension.',
  autoStart: true,
  requires: [INotebookTracker, IEditorTracker],
  optional: [IStatusBar, ILabShell, IDebugger],
  activate: (
    app: JupyterFrontEnd,
    notebooks: INotebookTracker,
    editors: IEditorTracker,
    statusBar: IStatusBar | null,
    labShell: ILabShell | null,
    debuggerService: IDebugger | null
  ): void => {
    const connection = new LabSocket(app.serviceManager.serverSettings);
    const changes = new DocumentChanges(connection, notebooks, editors);
    const editor = new ActiveEditor(
      app,
      connection,
      notebooks,
      editors,
      changes
    );
    const approvals = new Approvals(connection);
    const liveNotebooks = new LiveNotebooks(notebooks);
    // Every request of protocol.json needs an answer here, or this does not compile.
    connection.setHandlers({
      ...editor.handlers,
      ...commandHandlers(app.commands),
      ...approvals.handlers,
      ...liveNotebooks.handlers
    });
    if (debuggerService) {
      new BreakpointSync(connection, debuggerService, notebooks);
    }

    const panel = new ActivityPanel(
      connection,
      app.serviceManager.serverSettings
    );
    if (labShell) {
      labShell.add(panel, 'right', { rank: 900 });
    }
    app.commands.addCommand(CommandIDs.showActivity, {
      label: 'Show MCP Activity',
      caption: 'Show the recent tool calls of agents connected over MCP',
      execute: () => {
        if (labShell) {
          labShell.activateById(panel.id);
        }
      }
    });
    if (statusBar) {
      const status = new MCPStatus(connection);
      status.node.addEventListener('click', () => {
        void app.commands.execute(CommandIDs.showActivity);
      });
      statusBar.registerStatusItem('jupyter-mcp:status', {
        item: status,
        align: 'left',
        rank: 1000
      });
    }
    connection.start();
    console.log('jupyter-mcp: JupyterLab extension activated');
  }
};

export default plugin;
