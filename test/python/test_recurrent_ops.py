"""RNN, GRU and LSTM against onnxruntime, for the attributes the ONNX node tests leave out:
reverse and bidirectional directions, per-direction activations with alpha and beta, clip,
sequence_lens (with the reverse direction walking each entry from its own last step), layout 1,
initial states, peepholes, input_forget and linear_before_reset. Each case is a one-node model
run through every enabled target (the reference evaluator and the compiled CPU artifact), and
every output (Y, Y_h and, for LSTM, Y_c) must match onnxruntime.
"""
import subprocess
import zlib

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import sinter_testing as st

SEQ, BATCH, INPUT, HIDDEN = 5, 3, 4, 6
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def _case(op, direction="forward", layout=0, lengths=None, initial=False, bias=True,
          peepholes=False, **attributes):
    rng = np.random.default_rng(zlib.crc32(f"{op} {direction} {layout} {attributes}".encode()))
    dirs = 2 if direction == "bidirectional" else 1
    gates = GATES[op]
    x_shape = [BATCH, SEQ, INPUT] if layout else [SEQ, BATCH, INPUT]
    state_shape = [BATCH, dirs, HIDDEN] if layout else [dirs, BATCH, HIDDEN]
    values = {
        "X": rng.uniform(-1, 1, x_shape),
        "W": rng.uniform(-0.6, 0.6, [dirs, gates * HIDDEN, INPUT]),
        "R": rng.uniform(-0.6, 0.6, [dirs, gates * HIDDEN, HIDDEN]),
    }
    names = ["X", "W", "R"]
    if bias:
        values["B"] = rng.uniform(-0.5, 0.5, [dirs, 2 * gates * HIDDEN])
    names.append("B" if bias else "")
    if lengths is not None:
        values["sequence_lens"] = np.array(lengths, np.int32)
    names.append("sequence_lens" if lengths is not None else "")
    if initial:
        values["initial_h"] = rng.uniform(-1, 1, state_shape)
        if op == "LSTM":
            values["initial_c"] = rng.uniform(-1, 1, state_shape)
    names.append("initial_h" if initial else "")
    if op == "LSTM":
        names.append("initial_c" if initial else "")
        if peepholes:
            values["P"] = rng.uniform(-0.5, 0.5, [dirs, 3 * HIDDEN])
        names.append("P" if peepholes else "")
    while names and not names[-1]:
        names.pop()
    values = {k: (v if v.dtype == np.int32 else v.astype(np.float32)) for k, v in values.items()}

    outputs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    node = helper.make_node(op, names, outputs, direction=direction, hidden_size=HIDDEN,
                            layout=layout, **attributes)
    y_shape = [BATCH, SEQ, dirs, HIDDEN] if layout else [SEQ, dirs, BATCH, HIDDEN]
    graph = helper.make_graph(
        [node], op.lower(),
        [helper.make_tensor_value_info(k, TensorProto.INT32 if v.dtype == np.int32 else TensorProto.FLOAT,
                                       list(v.shape)) for k, v in values.items()],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, y_shape)]
        + [helper.make_tensor_value_info(name, TensorProto.FLOAT, state_shape) for name in outputs[1:]])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model, values


def _onnxruntime(op, options, inputs, tmp_path):
    """onnxruntime's outputs. It has no layout 1, so a layout-1 case runs as the layout-0 model
    with X and the initial states transposed, and the outputs are transposed back."""
    if not options.get("layout"):
        path = tmp_path / "truth.onnx"
        onnx.save(_case(op, **options)[0], path)
        return st.run_onnxruntime(path, inputs)
    model, _ = _case(op, **{**options, "layout": 0})
    path = tmp_path / "truth.onnx"
    onnx.save(model, path)
    swapped = {k: (v.transpose(1, 0, 2) if k in ("X", "initial_h", "initial_c") else v)
               for k, v in inputs.items()}
    outputs = st.run_onnxruntime(path, swapped)
    return {k: (v.transpose(2, 0, 1, 3) if k == "Y" else v.transpose(1, 0, 2)) for k, v in outputs.items()}


CASES = {
    "rnn_reverse": ("RNN", {"direction": "reverse"}),
    "rnn_bidirectional_initial": ("RNN", {"direction": "bidirectional", "initial": True}),
    "rnn_relu_clip": ("RNN", {"activations": ["Relu"], "clip": 0.7}),
    "rnn_layout1_lengths": ("RNN", {"layout": 1, "lengths": [5, 2, 0], "initial": True}),
    "rnn_bidirectional_two_activations": ("RNN", {"direction": "bidirectional", "activations": ["LeakyRelu", "ScaledTanh"],
                                                  "activation_alpha": [0.2, 0.8], "activation_beta": [1.5]}),
    "rnn_nobias": ("RNN", {"bias": False, "activations": ["HardSigmoid"], "activation_alpha": [0.3], "activation_beta": [0.4]}),
    "gru_bidirectional_lengths": ("GRU", {"direction": "bidirectional", "lengths": [3, 5, 0], "initial": True}),
    "gru_linear_before_reset": ("GRU", {"linear_before_reset": 1, "initial": True}),
    "gru_reverse_layout1_clip": ("GRU", {"direction": "reverse", "layout": 1, "clip": 0.5}),
    "gru_activations": ("GRU", {"activations": ["HardSigmoid", "Softsign"], "activation_alpha": [0.25], "activation_beta": [0.45]}),
    "lstm_peepholes_initial": ("LSTM", {"peepholes": True, "initial": True}),
    "lstm_bidirectional_lengths": ("LSTM", {"direction": "bidirectional", "lengths": [4, 0, 5], "peepholes": True,
                                            "initial": True}),
    "lstm_reverse_layout1": ("LSTM", {"direction": "reverse", "layout": 1, "initial": True}),
    "lstm_clip": ("LSTM", {"clip": 0.4, "initial": True}),
    "lstm_input_forget": ("LSTM", {"input_forget": 1, "peepholes": True}),
    "lstm_activations": ("LSTM", {"activations": ["Sigmoid", "Elu", "Softplus"], "activation_alpha": [0.9]}),
}


@pytest.mark.parametrize("target", st.enabled_targets())
@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_onnxruntime(case, target, tmp_path):
    op, options = CASES[case]
    model, inputs = _case(op, **options)
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    expected = _onnxruntime(op, options, inputs, tmp_path)
    actual = st.TARGETS[target](path, inputs, tmp_path)
    st.assert_outputs_match(actual, expected, f"{case} on {target}")


def test_bad_direction_is_a_clear_error(tmp_path):
    model, _ = _case("RNN")
    next(a for a in model.graph.node[0].attribute if a.name == "direction").s = b"sideways"
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    result = subprocess.run([str(st.sinter_bin()), "compile", str(path), "--target", "cpu", "-o",
                             str(tmp_path / "model.so")], capture_output=True, text=True)
    assert result.returncode == 1
    assert "direction 'sideways'" in result.stderr


def _sinter(*args):
    return subprocess.run([str(st.sinter_bin()), *map(str, args)], capture_output=True, text=True)


def test_wrong_activation_count_is_a_clear_error(tmp_path):
    model, _ = _case("LSTM")
    model.graph.node[0].attribute.append(helper.make_attribute("activations", ["Sigmoid", "Tanh"]))
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    result = _sinter("compile", path, "--target", "cpu", "-o", tmp_path / "model.so")
    assert result.returncode == 1
    assert "has 2 activations; LSTM with 1 direction(s) takes 3" in result.stderr, result.stderr


def test_sequence_length_out_of_range_is_a_clear_error(tmp_path):
    model, inputs = _case("GRU", lengths=[5, 9, 1])
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    flags = []
    for name, array in inputs.items():
        np.save(tmp_path / f"{name}.npy", array)
        flags += ["--input", f"{name}={tmp_path / (name + '.npy')}"]
    result = _sinter("run", path, "--reference", *flags, "-o", tmp_path / "out.npz")
    assert result.returncode == 1
    assert "sequence_lens[1] is 9, outside [0, 5]" in result.stderr, result.stderr
