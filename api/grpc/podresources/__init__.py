"""Generated stubs for the kubelet podresources API."""
