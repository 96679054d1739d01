#!/usr/bin/env python3
"""Fails when a module of the library imports from a layer above its own.

Layers, each importing only those before it (../shared/notes/house-review.md):
  core     value, event, expr, plan, temporal, model, engine, error
  dataflow operators, runtime
  app      sql, flow_builder, io, ingest, prepare, driver, persist, output, query, gen, bench
  cli      cli (the binary)
Labelling a commit's updates as change-feed rows is a pure function of plan and values, used by
the `ChangeFeed` operator, the runtime and the driver: it lives in `engine::changefeed`, core.
A reference is a `crate::<module>` path (in `use` or inline) in a file under src/<module>/ or
src/<module>.rs, outside test code. KNOWN lists upward imports allowed for a stated reason (none
today: the engine saves through its own record traits and the runtime through its ShardFiles
trait); the check fails on any other, and on a KNOWN entry that no longer occurs (so the list
only shrinks).
"""
import pathlib
import re
import sys

LAYERS = {
    "core": ["value", "event", "expr", "plan", "temporal", "model", "engine", "error"],
    "dataflow": ["operators", "runtime"],
    "app": ["sql", "flow_builder", "io", "ingest", "prepare", "driver", "persist", "output",
            "query", "gen", "bench", "warehouse", "delta"],
    "cli": ["cli"],
}
RANK = {m: i for i, (_, mods) in enumerate(LAYERS.items()) for m in mods}

# (from module, to module): why it is still there.
KNOWN = {}

def module_of(path, src):
    rel = path.relative_to(src)
    return rel.parts[0].removesuffix(".rs")

def main():
    src = pathlib.Path(__file__).resolve().parent.parent / "src"
    found = {}
    for path in sorted(src.rglob("*.rs")):
        here = module_of(path, src)
        if here not in RANK:
            continue
        # Test-only files (`tests.rs`, `*_tests.rs`, declared under `#[cfg(test)]`) may reach
        # anywhere, as test modules may.
        if path.name == "tests.rs" or path.name.endswith("_tests.rs"):
            continue
        text = path.read_text(encoding="utf-8")
        # `#[cfg(test)]` modules may reach anywhere: only the code before the first one counts.
        text = text.split("#[cfg(test)]")[0]
        for line_no, line in enumerate(text.splitlines(), 1):
            if line.lstrip().startswith("//"):
                continue
            for target in re.findall(r"crate::(\w+)", line):
                if target in RANK and RANK[target] > RANK[here]:
                    found.setdefault((here, target), f"{path.relative_to(src.parent)}:{line_no}")
    new = {edge: where for edge, where in found.items() if edge not in KNOWN}
    gone = [edge for edge in KNOWN if edge not in found]
    for (here, target), where in sorted(new.items()):
        print(f"{where}: `{here}` ({layer(here)}) imports `{target}` ({layer(target)}), a layer above")
    for here, target in gone:
        print(f".ci/layers.py: `{here}` no longer imports `{target}`: remove it from KNOWN")
    return 1 if new or gone else 0

def layer(module):
    return next(name for name, mods in LAYERS.items() if module in mods)

if __name__ == "__main__":
    sys.exit(main())
