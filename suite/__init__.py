"""The suite framework: target selection, infrastructure setup, fixtures, waiters, NRT helpers."""
