"""The emulated kubelet: resource managers (CPU, memory, devices, topology), gRPC servers and pod runtime."""
