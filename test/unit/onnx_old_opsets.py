"""Writes models in older ONNX op forms, with onnxruntime's outputs, for onnx_old_opset_test.cpp.

Usage: onnx_old_opsets.py OUTPUT_DIR. Each case is OUTPUT_DIR/<case>/model.onnx with
test_data_set_0/input_N.pb and output_N.pb, laid out as ONNX's own test data. The outputs come
from onnxruntime, which implements every opset itself: the importer's adapters are checked
against an independent implementation of the old semantics, not against sinter.
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

root = sys.argv[1]
rng = np.random.default_rng(0)
count = 0


def case(name, opset, nodes, inputs, outputs, initializers=()):
    global count
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape) for n, a in inputs],
        [onnx.ValueInfoProto(name=o) for o in outputs], list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset)], ir_version=7)
    folder = os.path.join(root, name)
    os.makedirs(os.path.join(folder, 'test_data_set_0'))
    onnx.save(model, os.path.join(folder, 'model.onnx'))
    session = ort.InferenceSession(os.path.join(folder, 'model.onnx'), providers=['CPUExecutionProvider'])
    results = session.run(None, dict(inputs))
    for i, (_, array) in enumerate(inputs):
        onnx.save_tensor(numpy_helper.from_array(array), f'{folder}/test_data_set_0/input_{i}.pb')
    for i, result in enumerate(results):
        onnx.save_tensor(numpy_helper.from_array(np.asarray(result)), f'{folder}/test_data_set_0/output_{i}.pb')
    count += 1


def constant(name, values, dtype=np.float32):
    return numpy_helper.from_array(np.array(values, dtype), name)


x = rng.standard_normal((2, 3, 4)).astype(np.float32)
X = [('x', x)]
image = rng.standard_normal((1, 2, 3, 4)).astype(np.float32)
IMAGE = [('x', image)]

# Softmax family before opset 13: 2-D coercion at `axis` (default 1).
for op in ['Softmax', 'LogSoftmax', 'Hardmax']:
    for opset in [7, 11, 13]:
        for axis in [None, 0, 1, 2, -1, -2]:
            attributes = {} if axis is None else {'axis': axis}
            case(f'{op}_{opset}_axis{axis}', opset, [helper.make_node(op, ['x'], ['y'], **attributes)], X, ['y'])

# Reductions: axes attribute before 13 (ReduceSum) or 18 (the others).
for op in ['ReduceSum', 'ReduceMean', 'ReduceMax', 'ReduceMin', 'ReduceProd', 'ReduceL1', 'ReduceL2',
           'ReduceLogSum', 'ReduceLogSumExp', 'ReduceSumSquare']:
    for opset in [11, 13, 17]:
        if op == 'ReduceSum' and opset > 12:
            continue
        data = [('x', np.abs(x) + 0.5)] if op == 'ReduceLogSum' else X
        case(f'{op}_{opset}', opset, [helper.make_node(op, ['x'], ['y'], axes=[0, -1], keepdims=0)], data, ['y'])
        case(f'{op}_{opset}_all', opset, [helper.make_node(op, ['x'], ['y'])], data, ['y'])

ones = rng.standard_normal((1, 3, 1)).astype(np.float32)
case('Squeeze_11', 11, [helper.make_node('Squeeze', ['x'], ['y'], axes=[0, 2])], [('x', ones)], ['y'])
case('Squeeze_7_all', 7, [helper.make_node('Squeeze', ['x'], ['y'])], [('x', ones)], ['y'])
case('Unsqueeze_11', 11, [helper.make_node('Unsqueeze', ['x'], ['y'], axes=[0, -1])], X, ['y'])
case('Split_11', 11, [helper.make_node('Split', ['x'], ['a', 'b'], axis=2, split=[1, 3])], X, ['a', 'b'])
case('Split_13_equal', 13, [helper.make_node('Split', ['x'], ['a', 'b'], axis=-1)], X, ['a', 'b'])
case('Split_18_num_outputs', 18, [helper.make_node('Split', ['x'], ['a', 'b', 'c'], axis=1, num_outputs=3)], X, ['a', 'b', 'c'])
case('Slice_9', 9, [helper.make_node('Slice', ['x'], ['y'], starts=[1, -3], ends=[100, -1], axes=[1, 2])], X, ['y'])
case('Slice_7_no_axes', 7, [helper.make_node('Slice', ['x'], ['y'], starts=[0, 1], ends=[1, 3])], X, ['y'])
for mode in ['constant', 'reflect', 'edge']:
    value = {'value': 1.5} if mode == 'constant' else {}
    case(f'Pad_10_{mode}', 10, [helper.make_node('Pad', ['x'], ['y'], pads=[0, 1, 2, 0, 2, 1], mode=mode, **value)], X, ['y'])
case('Clip_10', 10, [helper.make_node('Clip', ['x'], ['y'], min=-0.5, max=0.7)], X, ['y'])
case('Clip_10_max_only', 10, [helper.make_node('Clip', ['x'], ['y'], max=0.1)], X, ['y'])
case('Clip_10_no_bounds', 10, [helper.make_node('Clip', ['x'], ['y'])], X, ['y'])
case('TopK_9', 9, [helper.make_node('TopK', ['x'], ['values', 'indices'], k=2, axis=1)], X, ['values', 'indices'])
case('Dropout_10', 10, [helper.make_node('Dropout', ['x'], ['y'], ratio=0.3)], X, ['y'])

# Upsample (7: scales attribute, 9: input) and Resize-10: asymmetric coordinates.
case('Upsample_7_nearest', 7, [helper.make_node('Upsample', ['x'], ['y'], scales=[1.0, 1.0, 2.0, 3.0], mode='nearest')], IMAGE, ['y'])
case('Upsample_7_linear', 7, [helper.make_node('Upsample', ['x'], ['y'], scales=[1.0, 1.0, 2.0, 2.5], mode='linear')], IMAGE, ['y'])
scales = constant('scales', [1, 1, 2, 1.5])
case('Upsample_9_nearest', 9, [helper.make_node('Upsample', ['x', 'scales'], ['y'], mode='nearest')], IMAGE, ['y'], [scales])
case('Upsample_9_linear', 9, [helper.make_node('Upsample', ['x', 'scales'], ['y'], mode='linear')], IMAGE, ['y'], [scales])
for values in [[1, 1, 2, 1.5], [1, 1, 0.6, 0.5], [1, 1, 1.0, 0.75]]:
    for mode in ['nearest', 'linear']:
        case(f'Resize_10_{mode}_{values[2]}_{values[3]}', 10, [helper.make_node('Resize', ['x', 'scales'], ['y'], mode=mode)],
             IMAGE, ['y'], [constant('scales', values)])
empty = constant('empty', [])
sizes = constant('sizes', [1, 2, 5, 7], np.int64)
case('Resize_11_sizes', 11, [helper.make_node('Resize', ['x', 'empty', 'empty', 'sizes'], ['y'], mode='linear')], IMAGE, ['y'], [empty, sizes])
case('Resize_11_scales', 11, [helper.make_node('Resize', ['x', 'empty', 'scales'], ['y'], mode='nearest')], IMAGE, ['y'], [empty, scales])

# GroupNormalization-18: one scale and bias per group.
groups = rng.standard_normal((2, 4, 3)).astype(np.float32)
case('GroupNormalization_18', 18, [helper.make_node('GroupNormalization', ['x', 'scale', 'bias'], ['y'], num_groups=2)],
     [('x', groups)], ['y'], [constant('scale', [0.5, 2.0]), constant('bias', [1.0, -1.0])])

statistics = [constant(n, v) for n, v in [('s', [1.0, 2.0, 0.5]), ('b', [0.0, 1.0, -1.0]), ('m', [0.1, 0.2, 0.3]), ('v', [1.0, 0.5, 2.0])]]
case('BatchNormalization_7', 7, [helper.make_node('BatchNormalization', ['x', 's', 'b', 'm', 'v'], ['y'], spatial=1, epsilon=1e-3)], X, ['y'], statistics)
case('BatchNormalization_9', 9, [helper.make_node('BatchNormalization', ['x', 's', 'b', 'm', 'v'], ['y'])], X, ['y'], statistics)
case('Scatter_9', 9, [helper.make_node('Scatter', ['x', 'indices', 'updates'], ['y'], axis=0)],
     [('x', rng.standard_normal((3, 3)).astype(np.float32))], ['y'],
     [constant('indices', [[1, 0, 2]], np.int64), constant('updates', [[9, 8, 7]])])
case('MaxPool_7', 7, [helper.make_node('MaxPool', ['x'], ['y'], kernel_shape=[2, 2], strides=[1, 2], pads=[1, 0, 0, 1])], IMAGE, ['y'])
case('MaxPool_8_indices', 8, [helper.make_node('MaxPool', ['x'], ['y', 'indices'], kernel_shape=[2, 2])], IMAGE, ['y', 'indices'])
case('AveragePool_7', 7, [helper.make_node('AveragePool', ['x'], ['y'], kernel_shape=[2, 3], pads=[1, 1, 1, 1], count_include_pad=1)], IMAGE, ['y'])
case('Gemm_9', 9, [helper.make_node('Gemm', ['a', 'b', 'c'], ['y'], transB=1, alpha=0.5)],
     [('a', rng.standard_normal((2, 3)).astype(np.float32))], ['y'],
     [numpy_helper.from_array(rng.standard_normal((4, 3)).astype(np.float32), 'b'),
      numpy_helper.from_array(rng.standard_normal((4,)).astype(np.float32), 'c')])
print(count)
