"""bench/peers.py (issue #18 item 7): the peers-beside-torch benchmark runs where no peer is installed
(CI: vkml, torch, numpy), names the missing peers "not installed", writes vkml and torch records, and
merges into an existing JSON list; each peer's ports either build and train (peer importable) or raise
PeerNotInstalled (peer missing) -- never a skip."""

import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "bench")
sys.path.insert(0, BENCH)
import peers  # noqa: E402

WORKLOADS = ("train.mlp", "matmul.1024")
MODULE = {"jax": "jax", "tinygrad": "tinygrad", "mlx": "mlx"}  # mlx.core lives in the mlx package


def importable(peer):
    return importlib.util.find_spec(MODULE[peer]) is not None


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """One quick run, its JSON merged into a list that already holds another tool's records."""
    out = tmp_path_factory.mktemp("peers") / "bench.json"
    kept = [{"workload": "matmul.1024", "threads": 1, "vkml_s": 0.01, "torch_s": 0.01, "ratio": 1.0},
            {"workload": "train.mlp", "threads": 1, "lib": "jax", "seconds": 9.9, "source": "peers"}]
    out.write_text(json.dumps(kept))
    # the peers' builds are slow (a JIT compile each): where one is installed, the CI budget still holds
    p = subprocess.run([sys.executable, os.path.join(BENCH, "peers.py"), "--quick", "--threads", "1",
                        "--only", ",".join(WORKLOADS), "--json", str(out)],
                       capture_output=True, text=True, env=dict(os.environ), timeout=600)
    return p, json.loads(out.read_text()), kept


def test_quick_run_exits_cleanly(quick_run):
    p, _, _ = quick_run
    assert p.returncode == 0, p.stdout + p.stderr


def test_table_names_missing_peers(quick_run):
    p, _, _ = quick_run
    header = next(ln for ln in p.stdout.splitlines() if ln.startswith("| workload"))
    for col in ("vkml", "torch", "jax", "tinygrad", "mlx", "vkml/torch", "jax/torch"):
        assert col in header
    rows = [ln for ln in p.stdout.splitlines() if ln.startswith("| train.mlp") or ln.startswith("| matmul.1024")]
    assert len(rows) == 2, p.stdout
    for peer in peers.PEERS:
        if not importable(peer):
            assert all("not installed" in r for r in rows), p.stdout
            assert f"{peer} not installed" in p.stdout  # the versions line


def test_json_records(quick_run):
    p, recs, _ = quick_run
    mine = [r for r in recs if r.get("source") == "peers"]
    for wid in WORKLOADS:
        for lib in ("vkml", "torch"):
            rec = next(r for r in mine if r["workload"] == wid and r["lib"] == lib)
            assert rec["threads"] == 1 and rec["seconds"] > 0 and rec["spread"] is not None, rec
            assert set(rec) >= {"workload", "threads", "lib", "seconds", "ratio_to_torch", "spread"}
        torch_rec = next(r for r in mine if r["workload"] == wid and r["lib"] == "torch")
        assert torch_rec["ratio_to_torch"] == pytest.approx(1.0)
        for peer in peers.PEERS:
            rec = next(r for r in mine if r["workload"] == wid and r["lib"] == peer)
            if not importable(peer):
                assert rec["seconds"] is None and rec["note"] == "not installed", rec
            else:  # installed: a time, or a stated reason
                assert rec["seconds"] or rec.get("note", "").startswith("n/a"), rec


def test_json_merge_keeps_other_records(quick_run):
    _, recs, kept = quick_run
    assert kept[0] in recs                      # compare.py's record survives
    assert kept[1] not in recs                  # the old peers record is replaced
    assert len(recs) == 1 + len(WORKLOADS) * len(peers.LIBS)


def test_merge_refuses_a_non_list(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('{"not": "a list"}')
    with pytest.raises(SystemExit):
        peers.write_json(str(path), [])
    assert json.loads(path.read_text()) == {"not": "a list"}


@pytest.mark.parametrize("peer", peers.PEERS)
def test_port_builders(peer):
    """Installed: each train port builds, and its first loss is that of an untrained classifier (near
    torch's); missing: every port raises the ImportError-derived PeerNotInstalled."""
    if not importable(peer):
        for wid in peers.IDS:
            with pytest.raises(ImportError, match=f"{peer} not installed") as e:
                peers.build_peer(peer, wid, np)
            assert isinstance(e.value, peers.PeerNotInstalled)
        return
    import torch
    from train_models import train_loss, train_parts
    for kind in ("mlp", "gpt_small"):  # the quick ones to compile; bench/peers.py runs the rest
        run = peers.build_peer(peer, f"train.{kind}", np)
        model, _, batches = train_parts(kind, torch, np)
        with torch.no_grad():
            ref = train_loss(kind, torch, model(batches[0][0]), batches[0][1]).item()
        first = peers.loss_value(run.first_loss)
        assert abs(first - ref) < 0.25 * ref, (kind, first, ref)
        assert np.isfinite(peers.loss_value(run()))
    run = peers.build_peer(peer, "matmul.1024", np)
    assert tuple(run().shape) == (1024, 1024)
