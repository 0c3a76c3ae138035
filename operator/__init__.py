"""The operator: kopf controllers for NUMAResourcesOperator and NUMAResourcesScheduler, and manifest rendering.

Code outside this package imports only what ``__all__`` lists; every other module here is internal.
"""

__all__ = [
    "decisions",
    "kubeapi",
    "samples",
]
