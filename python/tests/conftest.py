"""Shared fixtures: a leader in this process, agents on it closed after each test, and an etcd
member for the HA tests."""

import os

import pytest

import muster
from ha_processes import etcd_member


@pytest.fixture
def leader():
    with muster.Leader({"worker": 2}, heartbeat_timeout=10) as running:
        yield running


@pytest.fixture
def agents(leader):
    made = [muster.Agent(leader.address, "worker", i, rpc_timeout=10) for i in range(2)]
    yield made
    for agent in made:
        agent.close()


@pytest.fixture
def etcd():
    """A one-member etcd cluster on free ports (Debian's etcd-server); its endpoint."""
    if not os.access("/usr/bin/etcd", os.X_OK):
        pytest.skip("/usr/bin/etcd is missing: run tools/install-deps.sh")
    with etcd_member() as endpoint:
        yield endpoint
