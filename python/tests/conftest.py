"""Shared fixtures: a leader in this process, and agents on it closed after each test."""

import pytest

import muster


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
