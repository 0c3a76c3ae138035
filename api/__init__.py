"""Definitions shared by every component: CRD manifests, gRPC protocols, quantities, NRT helpers."""
