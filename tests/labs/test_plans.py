"""A lab's [plan] is checked against what build_steps reads, so a typo fails content sync."""

import re
from pathlib import Path

from labs import plans


def test_every_plan_key_the_labs_app_reads_is_known_to_the_sync_check_and_no_other():
    read: set[str] = set()
    for path in Path(plans.__file__).parent.glob("*.py"):
        source = path.read_text()
        read |= set(re.findall(r'\bplan\.get\("([a-z_]+)"', source))
        read |= set(re.findall(r'get\("plan", \{\}\)\.get\("([a-z_]+)"', source))
    assert read == set(plans.PLAN_KEYS)


def test_plan_problems_name_the_typo_and_the_allowed_keys():
    problems = plans.plan_problems(plan={"sweep": "concurency", "repeat": 3}, param_names={"concurrency"})
    messages = [message for _, message in problems]
    assert any("[plan] key 'repeat' is unknown" in m for m in messages)
    assert any("sweep = 'concurency' is not one of this lab's parameters (concurrency)" in m for m in messages)
    assert plans.plan_problems(plan={"sweep": "model", "prefer_models": ["a"]}, param_names=set()) == []
