"""The git domain (GitPython) behind the git tools."""
