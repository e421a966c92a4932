"""muster.Leader(http=...): the leader's HTTP endpoint from Python, with agents of this process
changing what its metrics and the live page's JSON say."""

import json
import urllib.error
import urllib.request

import pytest

import muster


def fetch(url):
    with urllib.request.urlopen(url, timeout=10) as reply:
        return reply.status, reply.headers.get("Content-Type"), reply.read().decode()


def test_metrics_and_state_follow_the_job():
    with muster.Leader({"worker": 2}, http="127.0.0.1:0") as leader:
        assert leader.http_url.startswith("http://127.0.0.1:")
        agent = muster.Agent(leader.address, "worker", 0, rpc_timeout=10)
        try:
            agent.connect()
            agent.insert_key_value("config/lr", "0.01")
            assert agent.get_key_value("config/lr") == b"0.01"
            status, kind, text = fetch(leader.http_url + "/metrics")
            assert status == 200 and kind.startswith("text/plain; version=0.0.4")
            assert 'muster_tasks{job="worker",state="connected"} 1\n' in text
            assert 'muster_kv_operations_total{verb="insert",result="ok"} 1\n' in text
            assert "muster_kv_keys 1\n" in text
            status, kind, body = fetch(leader.http_url + "/api/state")
            state = json.loads(body)
            assert state["tasks"]["state"] == "CD"
            assert state["leader"]["address"] == leader.address
            assert state["kv"] == [{"directory": "config", "keys": 1, "bytes": 13,
                                    "parked_gets": 0, "watches": 0}]
            assert [e["kind"] for e in state["events"]][:2] == ["LEADER_STARTED",
                                                                "TASK_REGISTERED"]
        finally:
            agent.close()


def test_an_agents_writes_leave_one_kept_reply_not_one_per_write():
    # An agent that may send its writes again (leader_reconnect_timeout) tells the leader with
    # each which of them were answered: the leader keeps the reply of the last one only.
    with muster.Leader({"worker": 1}, http="127.0.0.1:0") as leader:
        agent = muster.Agent(leader.address, "worker", 0, rpc_timeout=10,
                             leader_reconnect_timeout=10)
        try:
            agent.connect()
            for i in range(1, 31):
                assert agent.increment_key_value("kept/n", 1) == i
            _, _, text = fetch(leader.http_url + "/metrics")
            assert "muster_kv_kept_replies 1\n" in text
        finally:
            agent.close()


def test_token_is_asked_of_every_request():
    with muster.Leader({"worker": 1}, http="127.0.0.1:0", token="s3cret") as leader:
        with pytest.raises(urllib.error.HTTPError) as refused:
            fetch(leader.http_url + "/api/state")
        assert refused.value.code == 401
        request = urllib.request.Request(leader.http_url + "/api/state",
                                         headers={"Authorization": "Bearer s3cret"})
        with urllib.request.urlopen(request, timeout=10) as reply:
            assert json.loads(reply.read())["tasks"]["count"] == 1


def test_bad_http_address_is_invalid_argument():
    with pytest.raises(muster.InvalidArgumentError, match="is not HOST:PORT"):
        muster.Leader({"worker": 1}, http="localhost")
    with muster.Leader({"worker": 1}) as leader:
        assert leader.http_url == ""
