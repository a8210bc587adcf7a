"""TP406 leaves CUDA streams and events in the arm of a CUDA option, and only there.

Sample N (ClassyVision's perf stats: ``if self._perf_stats.use_cuda_events():
self._start_event = torch.cuda.Event(enable_timing=True)``, the CPU timer used
otherwise): the program's own CUDA-only option (low value). Generated programs draw the
test of the ``if`` (an option named for CUDA, read, called or combined; a negated one,
one in an ``or``, options named otherwise), the arm the call sits in and the call. The
oracle, written here: left exactly when the call is in the ``if`` arm and the test is an
option named for CUDA, alone or in an ``and``.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

TESTS = {
    "self.stats.use_cuda_events()": True,
    "use_cuda_events()": True,
    "self.cuda_streams": True,
    "cfg.use_cuda_graph": True,
    "self.stats.use_cuda_events() and enabled": True,
    "enabled and self.CUDA_TIMING": True,
    "not use_cuda_events()": False,
    "use_cuda_events() or profile": False,
    "self.streams": False,
    "enabled": False,
    "self.stats.use_events()": False,
    "timing_on(level)": False,  # a call with arguments, not an option read
}
CALLS = (
    "self.start = torch.cuda.Event(enable_timing=True)",
    "self.stream = torch.cuda.Stream()",
    "torch.cuda.current_stream().wait_stream(self.stream)",
)


@given(
    test=st.sampled_from(sorted(TESTS)),
    in_body=st.booleans(),
    call=st.sampled_from(CALLS),
)
def test_a_cuda_option_s_arm_is_left(test: str, in_body: bool, call: str) -> None:
    lines = [
        "import torch",
        "",
        "",
        "class Timer:",
        "    def start(self, use_cuda_events, enabled, profile, cfg, timing_on, level):",
        f"        if {test}:",
        f"            {call}" if in_body else "            self.t = 0.0",
        "        else:",
        "            self.t = 0.0" if in_body else f"            {call}",
        "",
    ]
    found = check_text("\n".join(lines), "lib/timer.py", ruleset_for(["TP406"], None)).findings
    left = in_body and TESTS[test]
    assert bool(found) != left, ("\n".join(lines), found)
