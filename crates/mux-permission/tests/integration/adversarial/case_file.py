"""What the case generators share: collecting cases and writing them, with the profiles they
name, to a JSON file beside this one."""

import json
import os


def collector(default_profile):
    """A new list of cases and the `case` function that appends to it (under
    `default_profile` unless told otherwise)."""
    cases = []

    def case(cls, command, expect, profile=default_profile, mode="default"):
        cases.append(
            {"class": cls, "command": command, "expect": expect, "profile": profile, "mode": mode}
        )

    return cases, case


def write(name, profiles, cases):
    """Writes `{"profiles": …, "cases": …}` to `name` beside this file, and says how many
    cases of each class it holds."""
    here = os.path.dirname(os.path.abspath(__file__))
    out = os.path.join(here, name)
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"profiles": profiles, "cases": cases}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    counts = {}
    for c in cases:
        counts[str(c["class"])] = counts.get(str(c["class"]), 0) + 1
    print(f"wrote {len(cases)} cases to {out}: {counts}")
