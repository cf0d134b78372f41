"""A small module for agents to read, edit and explore through jupyter-mcp."""


def greet(name: str) -> str:
    """Return a greeting for ``name``."""
    return f"Hello, {name}!"


if __name__ == "__main__":
    print(greet("jupyter-mcp"))
