"""Code intelligence: jedi in a worker process, and refactorings written through documents."""
