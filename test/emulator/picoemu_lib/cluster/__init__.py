"""The emulated cluster's operations. core: the state directory (state file, lock, paths, files);
servers: the PostgreSQL servers and the fronts (processes, configuration, the template);
private_pgproto: the library the private ports load with `up --private-pgproto`; sync:
keeping every running instance's catalog and topology-dependent objects in step with the state;
movement: moving sharded rows with their buckets; lifecycle: up, down, stop, start; topology:
add-replicaset, expel, switch-master and the catalog toggles."""

from .core import Cluster

__all__ = ["Cluster"]
