"""gpukit.multinode.run_agents as a supervisor: output kept, failures and hangs stopped."""

import sys
import time

import pytest

from gpukit.multinode import run_agents


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_an_agent_that_writes_much_does_not_block(tmp_path):
    # More than a pipe holds (64 KiB): with pipes read one agent at a time, the second agent
    # would block on its output while the first waits for it.
    go = tmp_path / "go"
    first = python(f"import os, time\nwhile not os.path.exists({str(go)!r}): time.sleep(0.05)")
    second = python(f"print('x' * 200_000)\nopen({str(go)!r}, 'w').close()")
    outputs = run_agents([first, second], timeout_s=60)
    assert len(outputs[1]) > 200_000


def test_a_failed_agent_stops_the_others_at_once():
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="agent 1 failed with exit code 3") as failure:
        run_agents([python("import time; time.sleep(60)"), python("print('bye'); exit(3)")])
    assert time.monotonic() - started < 30
    assert "--- output of agent 1 ---\nbye" in str(failure.value)


def test_an_agent_that_ignores_sigterm_is_killed():
    stubborn = python(
        "import signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('waiting', flush=True)\n"
        "time.sleep(60)"
    )
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="did not finish within timeout_s=2 s") as failure:
        run_agents([stubborn], timeout_s=2)
    assert time.monotonic() - started < 30
    assert "waiting" in str(failure.value)
