"""A single-process Kubernetes API server that unmodified kubectl, kopf and client-python use."""
