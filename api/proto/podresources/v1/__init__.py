"""Package-data folder for a kubelet ``.proto`` file.

Nothing here is imported by other packages: the ``.proto`` files are package data.
"""

__all__: list[str] = []
