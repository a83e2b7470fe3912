#!/usr/bin/env python3
"""The layers point one way (docs/architecture.md): every `#include "LAYER/..."` in src/
names its own layer or one below it. Prints each include that points up and exits 1.

    tests/check_layers.py [REPO]
"""
import os
import re
import sys

# What each directory of src/ (and kernels/) may include, besides itself.
ALLOWED = {
    "core": set(),
    "io": {"core"},
    "reduce": {"core", "kernels"},
    "comm": {"core"},
    "analysis": {"core"},
    "output": {"core"},
    "pipeline": {"core", "io", "reduce", "comm", "analysis", "output"},
    "cli": {"core", "io", "reduce", "comm", "analysis", "output", "pipeline", "mock"},
    "plugin": {"io"},  # only io/shard_format.hpp, the header-only layout it writes and io reads
    "kernels": {"core", "reduce"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/')


def main(repo):
    wrong = []
    for layer, allowed in ALLOWED.items():
        top = os.path.join(repo, "kernels" if layer == "kernels" else os.path.join("src", layer))
        for dirpath, _, files in os.walk(top):
            for name in files:
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if m and m.group(1) != layer and m.group(1) not in allowed and m.group(1) in ALLOWED.keys() | {"mock"}:
                            wrong.append("%s:%d: %s includes %s/, a layer it may not use"
                                         % (os.path.relpath(path, repo), number, layer, m.group(1)))
    for w in wrong:
        print(w)
    print("layers: %d include(s) pointing the wrong way" % len(wrong))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")))
