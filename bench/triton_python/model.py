"""A Triton Inference Server Python-backend model: the baseline that bench/triton_load.py
--python-runner serves beside the sinter backend (docs/serving.md, "Measurements").

Parameters (config.pbtxt, written by triton_load.py):
  runner       "torch": the suite model (test/gpu/run_gpu_suite.py build_torch_model, the same
               seeded weights the ONNX export was made from) in fp16 on the instance's GPU;
               "onnxruntime": the ONNX file on onnxruntime's CPU provider (a check of the plumbing
               on machines without a GPU)
  suite_dir    the folder holding run_gpu_suite.py (torch)
  suite_model  the suite's model name: resnet50, bert, ... (torch)
  onnx_path    the ONNX model (onnxruntime)
Requests run one at a time (max_batch_size 0); outputs are float32 like the ONNX model's.
"""
import json
import os
import sys

# The stub's embedded Python does not take PYTHONPATH; the packages (numpy, torch or onnxruntime)
# come from the folders SINTER_BASELINE_SITE names (os.pathsep-separated), which triton_load.py
# sets from its own interpreter's site-packages.
for folder in reversed(os.environ.get("SINTER_BASELINE_SITE", "").split(os.pathsep)):
    if folder and folder not in sys.path:
        sys.path.insert(0, folder)

import numpy as np  # noqa: E402
import triton_python_backend_utils as pb_utils  # noqa: E402


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        parameters = {key: value["string_value"] for key, value in config.get("parameters", {}).items()}
        self.inputs = [i["name"] for i in config["input"]]
        self.outputs = [o["name"] for o in config["output"]]
        self.runner = parameters["runner"]
        if self.runner == "torch":
            sys.path.insert(0, parameters["suite_dir"])
            import torch
            import run_gpu_suite

            self.torch = torch
            model, _ = run_gpu_suite.build_torch_model(parameters["suite_model"])
            self.device = torch.device("cuda", int(args["model_instance_device_id"]))
            self.model = model.to(self.device).half().eval()
        elif self.runner == "onnxruntime":
            import onnxruntime

            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = 1
            self.session = onnxruntime.InferenceSession(parameters["onnx_path"], options,
                                                        providers=["CPUExecutionProvider"])
        else:
            raise pb_utils.TritonModelException(f"unknown runner '{self.runner}'")

    def run(self, arrays):
        if self.runner == "onnxruntime":
            return self.session.run(self.outputs, dict(zip(self.inputs, arrays)))
        torch = self.torch
        with torch.inference_mode():
            tensors = []
            for array in arrays:
                tensor = torch.from_numpy(array).to(self.device)
                tensors.append(tensor.half() if tensor.is_floating_point() else tensor)
            results = self.model(*tensors)
            if not isinstance(results, (tuple, list)):
                results = [results]
            return [r.float().cpu().numpy() for r in results]

    def execute(self, requests):
        responses = []
        for request in requests:
            try:
                # DLPack both ways (as_numpy() misreads arrays under numpy 2, like Tensor(); above).
                arrays = [np.from_dlpack(pb_utils.get_input_tensor_by_name(request, name)).copy()
                          for name in self.inputs]
                results = self.run(arrays)
                # Through DLPack: this backend's pb_utils.Tensor(name, array) gives an empty
                # tensor for arrays of numpy 2 (the wheel's backend was built before it).
                responses.append(pb_utils.InferenceResponse(
                    [pb_utils.Tensor.from_dlpack(name, np.ascontiguousarray(r, dtype=np.float32))
                     for name, r in zip(self.outputs, results)]))
            except Exception as error:  # noqa: BLE001  an error response, never a dead instance
                responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError(str(error))))
        return responses
