"""How clients reach the tools: seed and proxy REST, standard MCP, the JupyterLab socket, the
seed port; one base handler (auth, origin, errors) and one route table (routes.py).
"""
