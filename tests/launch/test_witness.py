"""The group witness (issue 37, class 1): a ``cat`` in runsnap's process group that tells a
signal sent to the whole group from one sent to runsnap alone, holding none of the
descriptors runsnap was given, and leaving no zombie behind. (Its cost, ~0.3 ms a capture, is
measured in benchmarks/RESULTS.md: a ``posix_spawn`` that is not waited for saved 0.16 ms and
nothing a capture shows, so the plain ``subprocess`` stays.)"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

from runsnap.launch.signals import GroupWitness


def test_the_witness_holds_no_descriptor_runsnap_was_given() -> None:
    # a make jobserver's pipe, a shell's 3>file: whoever waits for its end must not wait for
    # the witness too
    r, w = os.pipe()
    os.set_inheritable(w, True)
    witness = GroupWitness()
    try:
        assert witness.proc is not None
        os.close(w)
        os.set_blocking(r, False)
        time.sleep(0.05)
        assert os.read(r, 1) == b""  # end of file: no one else holds the write end
    finally:
        witness.close()
        os.close(r)


def test_witnesses_ended_are_reaped_and_leave_no_zombie() -> None:
    pids = []
    for _ in range(20):
        witness = GroupWitness()
        assert witness.proc is not None
        pids.append(witness.proc.pid)
        witness.close()
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            continue  # reaped already
        raise AssertionError(f"witness {pid} was not reaped")


_SCRIPT = textwrap.dedent("""
    import os, signal
    from runsnap.launch.signals import GroupWitness
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    w = GroupWitness()
    os.kill(os.getpid(), signal.SIGUSR1)  # to this process alone
    alone = w.took(signal.SIGUSR1)
    signal.sigtimedwait({signal.SIGUSR1}, 1)
    os.killpg(os.getpgrp(), signal.SIGUSR1)  # to the whole group
    group = w.follows(signal.SIGUSR1, 2.0)
    signal.sigtimedwait({signal.SIGUSR1}, 1)
    w.close()
    print(alone, group)
""")


def test_the_witness_tells_a_signal_to_the_group_from_one_to_runsnap_alone() -> None:
    proc = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True,
                          timeout=60, start_new_session=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "True"]
