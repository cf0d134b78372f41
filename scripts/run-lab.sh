#!/usr/bin/env bash
# Start JupyterLab with jupyter-mcp-ide on notebooks/ and print how to reach it (used by `make run`).
#
# Environment: JUPYTER_TOKEN (default: a fresh random token), PORT (default: the first free port
# from 8888), NOTEBOOK_DIR (default: notebooks/). Extra arguments go to `jupyter lab`.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=.venv/bin/python
ROOT_DIR="${NOTEBOOK_DIR:-notebooks}"
TOKEN="${JUPYTER_TOKEN:-$("$PY" -c 'import secrets; print(secrets.token_hex(24))')}"
PORT="${PORT:-$("$PY" - <<'PYEOF'
import socket

for port in range(8888, 8988):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
        print(port)
        break
else:
    raise SystemExit("no free port in 8888-8987; set PORT")
PYEOF
)}"
BASE="http://127.0.0.1:${PORT}"

flags=(--no-browser --ServerApp.ip=127.0.0.1 "--ServerApp.port=${PORT}"
       --ServerApp.port_retries=0 "--ServerApp.root_dir=${ROOT_DIR}")
if [ "$(id -u)" = 0 ]; then
    flags+=(--allow-root)
fi

# Print the banner once the server answers, so it is not lost in the start-up log.
(
    for _ in $(seq 1 240); do
        if "$PY" - "$BASE" "$TOKEN" 2>/dev/null <<'PYEOF'
import sys
import urllib.request

base, token = sys.argv[1], sys.argv[2]
request = urllib.request.Request(base + "/mcp/status", headers={"Authorization": "token " + token})
urllib.request.urlopen(request, timeout=2).read()
PYEOF
        then
            cat <<BANNER

================================================================================
 jupyter-mcp-ide is running on ${ROOT_DIR}/
   JupyterLab:  ${BASE}/lab?token=${TOKEN}
   Server URL:  ${BASE}/
   Token:       ${TOKEN}
 List the tools:
   curl -H "Authorization: token ${TOKEN}" ${BASE}/mcp/list_tools
 Call one:
   curl -H "Authorization: token ${TOKEN}" -d '{"pathInProject": "/"}' \\
        ${BASE}/mcp/list_files_in_folder
 Stop with Ctrl-C.
================================================================================

BANNER
            echo " Connect MCP clients (standard MCP at ${BASE}/mcp):"
            .venv/bin/jupyter-mcp-ide config --url "${BASE}/" --token "${TOKEN}" \
                --root "$(cd "$ROOT_DIR" && pwd)" | sed 's/^/   /'
            echo "================================================================================"
            exit 0
        fi
        sleep 0.5
    done
    echo "jupyter-mcp-ide: the server did not answer on ${BASE} within 120 s" >&2
) &

export JUPYTER_TOKEN="$TOKEN"
exec .venv/bin/jupyter lab "${flags[@]}" "$@"
