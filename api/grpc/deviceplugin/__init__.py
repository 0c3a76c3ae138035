"""Generated stubs for the kubelet device plugin API."""
