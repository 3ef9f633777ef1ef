"""Training on several machines: :func:`run_agents` starts ``torchrun`` agents (one per
"node", on a cluster each on its own machine) and returns their ranks' output, failing with all
of it when one fails or hangs; :data:`TORCHRUN_ENV` says what ``torchrun`` tells each rank;
:func:`load_checkpoint` reads a sharded checkpoint of ``torch.distributed.checkpoint``, saved by
any number of processes, into one process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import torch

from gpukit._checks import check_number, check_type

__all__ = ["TORCHRUN_ENV", "load_checkpoint", "run_agents"]

#: What ``torchrun`` puts in each rank's environment, and what it means.
TORCHRUN_ENV = {
    "RANK": "this process among all processes of the job",
    "LOCAL_RANK": "this process among those of its node (its GPU there)",
    "GROUP_RANK": "this node among the nodes (the rendezvous decides)",
    "WORLD_SIZE": "processes in the job",
    "LOCAL_WORLD_SIZE": "processes on this node",
    "MASTER_ADDR": "host of the store that the process group starts from",
    "MASTER_PORT": "its port",
    "TORCHELASTIC_RESTART_COUNT": "restarts of the job so far",
}


def run_agents(commands: Sequence[Sequence[str]], timeout_s: float = 300.0) -> list[str]:
    """Run ``commands`` (``torchrun`` agents) at the same time; return each one's output.

    Each agent's standard output and error are kept together, in order. If an agent fails,
    or they have not all finished after ``timeout_s`` seconds (a rendezvous that waits for a
    node that never comes, a hang), every agent still running is stopped with its processes,
    and a ``RuntimeError`` shows the output of all of them.

    Example:
        >>> import sys
        >>> run_agents([[sys.executable, "-c", f"print('node {n}')"] for n in "ab"])
        ['node a\\n', 'node b\\n']
    """
    if isinstance(commands, str) or any(isinstance(command, str) for command in commands):
        raise TypeError(
            "commands must be a list of commands, each a list of arguments "
            f"(e.g. [['torchrun', ...], ['torchrun', ...]]), got {commands!r}"
        )
    commands = [list(map(str, command)) for command in commands]
    if not commands or not all(commands):
        raise ValueError("commands must hold at least one non-empty command")
    check_number(timeout_s, "timeout_s")
    with tempfile.TemporaryDirectory(prefix="gpukit-agents-") as folder:
        # Output goes to files, not pipes: an agent that writes more than a pipe holds while
        # nobody reads it would block, and look like a hang.
        logs = [Path(folder) / f"{i}.log" for i in range(len(commands))]
        agents = []
        for command, log in zip(commands, logs, strict=True):
            with log.open("wb") as out:
                # A session of its own: stopping the agent stops the ranks it started.
                agents.append(
                    subprocess.Popen(
                        command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
                    )
                )
        try:
            failed = _wait_for_agents(agents, timeout_s)
        finally:  # also on Ctrl-C
            _stop_agents(agents)
        outputs = [log.read_text(encoding="utf-8", errors="replace") for log in logs]
    if failed:
        report = "\n\n".join(
            f"--- output of agent {i} ---\n{out.rstrip() or '(nothing)'}"
            for i, out in enumerate(outputs)
        )
        raise RuntimeError("; ".join(failed) + "\n\n" + report)
    return outputs


def _wait_for_agents(agents: Sequence[subprocess.Popen], timeout_s: float) -> list[str]:
    """Wait until every agent has exited, one has failed or ``timeout_s`` has passed; return
    what went wrong (nothing: all succeeded)."""
    deadline = time.monotonic() + timeout_s
    while True:
        codes = [agent.poll() for agent in agents]
        failed = [f"agent {i} failed with exit code {code}" for i, code in enumerate(codes) if code]
        if failed:
            return failed
        if None not in codes:
            return []
        if time.monotonic() > deadline:
            return [f"the agents did not finish within timeout_s={timeout_s:g} s"]
        time.sleep(0.1)


def _stop_agents(agents: Sequence[subprocess.Popen]) -> None:
    """Stop the agents still running with their ranks: SIGTERM, then SIGKILL after 5 s."""
    for agent in agents:
        if agent.poll() is None:
            os.killpg(agent.pid, signal.SIGTERM)
    for agent in agents:
        try:
            agent.wait(5)
        except subprocess.TimeoutExpired:  # SIGTERM ignored: no more waiting
            os.killpg(agent.pid, signal.SIGKILL)
            agent.wait()


def load_checkpoint(net: torch.nn.Module, path: str | Path) -> torch.nn.Module:
    """Load a checkpoint that :mod:`torch.distributed.checkpoint` saved from the sharded
    ``net`` of any number of processes into this process's whole ``net``; return it.

    Each saved shard says which part of which parameter it holds, so the loader reads the
    pieces it needs, whatever the world size that wrote them.

    Example:
        >>> import tempfile
        >>> import warnings
        >>> import torch.distributed.checkpoint as dcp
        >>> from gpukit.sharding import RowTransformer
        >>> folder = tempfile.mkdtemp()
        >>> with warnings.catch_warnings():  # no process group: dcp warns it saves from one
        ...     warnings.filterwarnings("ignore", "torch.distributed is .*single process")
        ...     dcp.save({"model": RowTransformer(16, 2, 1, seed=1).state_dict()},
        ...              checkpoint_id=folder, no_dist=True)  # doctest: +ELLIPSIS
        Metadata(...)
        >>> net = load_checkpoint(RowTransformer(16, 2, 1, seed=2), folder)
        >>> torch.equal(net.head.linear.weight, RowTransformer(16, 2, 1, seed=1).head.linear.weight)
        True
    """
    check_type(net, "net", torch.nn.Module, "a torch.nn.Module")
    import torch.distributed.checkpoint as dcp

    state = {"model": net.state_dict()}
    with warnings.catch_warnings():
        # Its warning says what is meant: no process group, so this one process loads it all.
        warnings.filterwarnings("ignore", "torch.distributed is .*single process")
        dcp.load(state, checkpoint_id=str(path), no_dist=True)
    net.load_state_dict(state["model"])
    return net
