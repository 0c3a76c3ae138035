"""The operator: kopf controllers for NUMAResourcesOperator and NUMAResourcesScheduler, and manifest rendering."""
