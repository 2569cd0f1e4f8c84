"""Scale-out: processes spread over several hosts that share a Redis (see docs/scale-out.md)."""

from .._public import published
from ._node import ClusterError as ClusterError
from ._node import ClusterNode as ClusterNode
from ._node import cluster_config as cluster_config
from ._node import placement as placement
from ._node import rendezvous as rendezvous

__all__ = ["ClusterError", "ClusterNode", "cluster_config", "placement", "rendezvous"]

published(globals())
