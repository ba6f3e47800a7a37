"""The pod runs of tests/pods (real multi-process JAX CPU recordings), for the pod's headline metrics."""

from tests.pods.conftest import pod_run  # noqa: F401 - a fixture
