"""Package-data folder for a kubelet ``.proto`` file."""
