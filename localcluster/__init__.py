"""The embedded cluster: an API server, controllers and emulated multi-NUMA kubelets in one process."""
