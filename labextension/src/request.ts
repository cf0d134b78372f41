/**
 * The one helper for the extension's REST calls to the server (its websocket is connection.ts).
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

/**
 * Call `{base_url}<path>` with the application's credentials (cookie and XSRF token, or its
 * token). Answers with the response; a network failure throws ServerConnection.NetworkError.
 */
export async function requestAPI(
  settings: ServerConnection.ISettings,
  path: string,
  init: RequestInit = {}
): Promise<Response> {
  const url = URLExt.join(settings.baseUrl, path);
  return ServerConnection.makeRequest(url, init, settings);
}
