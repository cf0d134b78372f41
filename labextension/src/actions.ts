/**
 * Actions: JupyterLab's command registry, listed and executed for the server.
 */
import { CommandRegistry } from '@lumino/commands';

import { RequestHandlers } from './protocol';

/**
 * How long to wait for a command to fail at once before answering "ok" (commands are not
 * awaited to completion: the answer only says the command started).
 */
const EARLY_FAILURE_MS = 150;

/**
 * The answers to the server's command requests, from `commands`.
 */
export function commandHandlers(commands: CommandRegistry) {
  return {
    listCommands: () => listCommands(commands),
    hasCommand: ({ id }) => commands.hasCommand(id),
    executeCommand: ({ id }) => executeCommand(commands, id)
  } satisfies Partial<RequestHandlers>;
}

/**
 * Commands a user could run now: enabled, visible and with a label.
 */
export function listCommands(
  commands: CommandRegistry
): { id: string; text: string }[] {
  const found: { id: string; text: string }[] = [];
  for (const id of commands.listCommands()) {
    try {
      const text = commands.label(id);
      if (text && commands.isEnabled(id) && commands.isVisible(id)) {
        found.push({ id, text });
      }
    } catch {
      // A command that cannot describe itself without arguments is not one to offer.
    }
  }
  return found;
}

/**
 * Start a command; "not found" for an unknown id, an error if it is disabled or fails at once.
 */
export async function executeCommand(
  commands: CommandRegistry,
  id: string
): Promise<string> {
  if (!commands.hasCommand(id)) {
    return 'not found';
  }
  let enabled = true;
  try {
    enabled = commands.isEnabled(id);
  } catch {
    enabled = true;
  }
  if (!enabled) {
    throw new Error(
      `Action ${id} is not available in JupyterLab right now (it is disabled)`
    );
  }
  const running = commands.execute(id);
  const early = await Promise.race([
    running.then(
      () => null,
      (reason: unknown) =>
        reason instanceof Error ? reason.message : String(reason)
    ),
    new Promise<null>(resolve =>
      window.setTimeout(() => resolve(null), EARLY_FAILURE_MS)
    )
  ]);
  if (early !== null) {
    throw new Error(`Action ${id} failed: ${early}`);
  }
  return 'ok';
}
