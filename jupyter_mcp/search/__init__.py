"""Text search over the project: an in-memory index kept fresh, matching in a worker."""
