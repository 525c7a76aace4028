"""The op families' one home per layer (docs/architecture.md, "One op table"): every file that
registers per-op rules is named after the family whose ops it registers, in shape inference
(lib/ir/infer_<family>*.cpp), the reference (lib/reference/<family>*.cpp) and lowering
(lib/codegen/lowering/lower_<family>*.cpp). The rule tables check at startup that a file's
registration adds only its family's ops; this checks that the files are named so."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

LAYERS = {
    "lib/ir": ("infer_", re.compile(r"\btable\.add\(OpKind::(\w+)")),
    "lib/reference": ("", re.compile(r"\btable\.add\(OpKind::(\w+)")),
    "lib/codegen/lowering": ("lower_", re.compile(r"\btable\.add(?:Injective|Kernel)\(OpKind::(\w+)")),
}


def op_families():
    """Op name -> family stem, read from ops.def and op.cpp's opFamilyName."""
    stems = dict(re.findall(r"case OpFamily::(\w+): return \"(\w+)\";", (ROOT / "lib/ir/op.cpp").read_text()))
    ops = {}
    for line in (ROOT / "include/sinter/ir/ops.def").read_text().splitlines():
        match = re.match(r"OP\((\w+), [^,]+, [^,]+, [^,]+, [^,]+, \w+, (\w+), ", line)
        if match:
            ops[match.group(1)] = stems[match.group(2)]
    return ops


def test_every_op_has_a_family_with_a_file_stem():
    ops = op_families()
    assert len(ops) > 150
    assert ops["Conv"] == "convolution" and ops["Slice"] == "data_movement"


def test_rule_files_are_named_after_the_family_they_register():
    ops = op_families()
    misplaced, registering = [], 0
    for folder, (prefix, registration) in LAYERS.items():
        for source in sorted((ROOT / folder).glob("*.cpp")):
            # Loops register several kinds: `for (OpKind kind : {OpKind::A, ...}) table.add(kind, ...)`.
            text = source.read_text()
            kinds = set(registration.findall(text))
            for loop in re.findall(r"for \(OpKind kind : \{([^}]*)\}\)\s*\n?\s*table\.add", text):
                kinds.update(re.findall(r"OpKind::(\w+)", loop))
            if not kinds:
                continue
            registering += 1
            stem = source.stem
            assert stem.startswith(prefix), f"{source} registers rules but is not named {prefix}<family>"
            name = stem[len(prefix):]
            for kind in sorted(kinds):
                if kind == "Op":  # the parameter of a registering macro
                    continue
                assert kind in ops, f"{source} registers {kind}, which ops.def does not list"
                family = ops[kind]
                if not (name == family or name.startswith(family + "_")):
                    misplaced.append(f"{source.relative_to(ROOT)} registers {kind}, of the {family} family")
    assert registering > 40
    assert not misplaced, "\n".join(misplaced)
