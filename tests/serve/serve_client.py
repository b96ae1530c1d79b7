"""Helpers shared by the `rnnc serve` tests and the load benchmark: start a server on loopback
with free ports, and talk to it over gRPC (stubs generated from serve/proto at build time) and
HTTP (urllib)."""
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import numpy as np


def import_stubs(stub_dir):
    sys.path.insert(0, stub_dir)
    import grpc_service_pb2
    import grpc_service_pb2_grpc
    import health_pb2
    import health_pb2_grpc
    return grpc_service_pb2, grpc_service_pb2_grpc, health_pb2, health_pb2_grpc


class Server:
    """`rnnc serve` on 127.0.0.1 with ports chosen by the server (--grpc-port 0 --http-port 0)."""

    def __init__(self, rnnc, args, ready_timeout=240):
        self.process = subprocess.Popen(
            [rnnc, "serve", "--host", "127.0.0.1", "--grpc-port", "0", "--http-port", "0"] + args,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines = []
        self.ready_seconds = None
        deadline = time.monotonic() + ready_timeout
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError("rnnc serve exited before ready:\n" + "".join(self.lines))
            self.lines.append(line)
            if line.startswith("rnnc serve: ready "):
                fields = line.split()
                self.grpc_address = fields[3].split("=", 1)[1]
                self.http_address = fields[4].split("=", 1)[1]
                self.ready_seconds = float(fields[6])
                break
        else:
            self.process.kill()
            raise RuntimeError("rnnc serve not ready in time:\n" + "".join(self.lines))
        # Keep draining stdout so the server never blocks on a full pipe.
        self.reader = threading.Thread(target=self._read_rest, daemon=True)
        self.reader.start()

    def _read_rest(self):
        for line in self.process.stdout:
            self.lines.append(line)

    def url(self, path):
        return "http://" + self.http_address + path

    def terminate(self):
        self.signalled = True
        self.process.terminate()

    def stop(self, timeout=30):
        if self.process.poll() is None and not getattr(self, "signalled", False):
            self.terminate()
        code = self.process.wait(timeout=timeout)
        self.reader.join(timeout=5)
        return code


def http(method, url, body=None, headers=None, timeout=60):
    """(status, headers, body bytes) of one HTTP request; error statuses are returned, not raised."""
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def http_json(method, url, payload=None, timeout=60):
    body = None if payload is None else json.dumps(payload).encode()
    status, _, data = http(method, url, body, {"Content-Type": "application/json"}, timeout)
    return status, (json.loads(data) if data else None)


DATATYPES = {np.float32: "FP32", np.float64: "FP64", np.int64: "INT64", np.int32: "INT32"}


def datatype_of(array):
    return DATATYPES[array.dtype.type]


def grpc_request(pb2, model, inputs, raw=True, parameters=None, outputs=None):
    """A ModelInferRequest: inputs {name: array}, raw or typed contents, parameters {name: value}."""
    request = pb2.ModelInferRequest(model_name=model)
    for name, array in inputs.items():
        tensor = request.inputs.add(name=name, datatype=datatype_of(array), shape=list(array.shape))
        if raw:
            request.raw_input_contents.append(np.ascontiguousarray(array).tobytes())
        elif array.dtype == np.float32:
            tensor.contents.fp32_contents.extend(array.ravel().tolist())
        elif array.dtype == np.float64:
            tensor.contents.fp64_contents.extend(array.ravel().tolist())
        elif array.dtype == np.int64:
            tensor.contents.int64_contents.extend(array.ravel().tolist())
    for name, value in (parameters or {}).items():
        parameter = request.parameters[name]
        if isinstance(value, bool):
            parameter.bool_param = value
        elif isinstance(value, int):
            parameter.int64_param = value
        else:
            parameter.string_param = value
    for name in outputs or []:
        request.outputs.add(name=name)
    return request


NUMPY_TYPES = {"FP32": np.float32, "FP64": np.float64, "INT64": np.int64, "INT32": np.int32,
               "BOOL": np.bool_}


def grpc_outputs(response):
    """{name: array} from a ModelInferResponse, raw or typed."""
    result = {}
    for k, output in enumerate(response.outputs):
        dtype = NUMPY_TYPES[output.datatype]
        if response.raw_output_contents:
            array = np.frombuffer(response.raw_output_contents[k], dtype=dtype)
        else:
            contents = output.contents
            values = {"FP32": contents.fp32_contents, "FP64": contents.fp64_contents,
                      "INT64": contents.int64_contents, "INT32": contents.int_contents,
                      "BOOL": contents.bool_contents}[output.datatype]
            array = np.array(list(values), dtype=dtype)
        result[output.name] = array.reshape(list(output.shape))
    return result


def rest_infer_body(inputs, parameters=None, binary=False, binary_outputs=False):
    """(body bytes, headers) of a REST infer request: JSON data, or the binary-data extension."""
    payload = {"inputs": []}
    if parameters:
        payload["parameters"] = parameters
    if binary_outputs:
        payload.setdefault("parameters", {})["binary_data_output"] = True
    blobs = []
    for name, array in inputs.items():
        entry = {"name": name, "datatype": datatype_of(array), "shape": list(array.shape)}
        if binary:
            blob = np.ascontiguousarray(array).tobytes()
            entry["parameters"] = {"binary_data_size": len(blob)}
            blobs.append(blob)
        else:
            entry["data"] = array.tolist()
        payload["inputs"].append(entry)
    header = json.dumps(payload).encode()
    headers = {"Content-Type": "application/json"}
    if binary:
        headers = {"Content-Type": "application/octet-stream",
                   "Inference-Header-Content-Length": str(len(header))}
    return header + b"".join(blobs), headers


def rest_outputs(headers, body):
    """{name: array} from a REST infer response, JSON or binary."""
    length = headers.get("Inference-Header-Content-Length")
    header = json.loads(body[:int(length)] if length else body)
    offset = int(length) if length else 0
    result = {}
    for output in header["outputs"]:
        dtype = NUMPY_TYPES[output["datatype"]]
        if "data" in output:
            array = np.array(output["data"], dtype=dtype)
        else:
            size = output["parameters"]["binary_data_size"]
            array = np.frombuffer(body[offset:offset + size], dtype=dtype)
            offset += size
        result[output["name"]] = array.reshape(output["shape"])
    return result
