"""What can be checked of rnnc serve's deployment files here (no image registry, no cluster):
the KServe ServingRuntime and InferenceService in docs/serving.md parse as YAML and are the
objects KServe expects, pointing at the ports and the command the server has; the Dockerfile
builds with the README's build commands and warms the kernel cache at image build."""
import re
import sys

import yaml

root = sys.argv[1]


def check(name, condition, detail=""):
    if not condition:
        raise AssertionError(f"{name}: {detail}")
    print(f"ok: {name}")


docs = open(f"{root}/docs/serving.md").read()
blocks = re.findall(r"```yaml\n(.*?)```", docs, re.S)
objects = [o for block in blocks for o in yaml.safe_load_all(block) if o]
kinds = {o["kind"]: o for o in objects}
check("docs/serving.md YAML parses", {"ServingRuntime", "InferenceService"} <= set(kinds),
      str(list(kinds)))
runtime, service = kinds["ServingRuntime"], kinds["InferenceService"]
check("apiVersion serving.kserve.io/v1alpha1 and v1beta1",
      runtime["apiVersion"] == "serving.kserve.io/v1alpha1" and
      service["apiVersion"] == "serving.kserve.io/v1beta1")
container = runtime["spec"]["containers"][0]
ports = {p["containerPort"]: p for p in container["ports"]}
check("ServingRuntime: v2 protocol, one port (gRPC 8001 or HTTP 8000) as KServe allows",
      "v2" in runtime["spec"]["protocolVersions"] and len(ports) == 1 and
      set(ports) <= {8000, 8001}, str(container["ports"]))
command = container.get("args", []) + container.get("command", [])
check("ServingRuntime runs rnnc serve on 0.0.0.0",
      "serve" in command and "0.0.0.0" in command, str(command))
predictor = service["spec"]["predictor"]
check("InferenceService names the runtime and the v2 protocol",
      predictor["model"]["runtime"] == runtime["metadata"]["name"] and
      predictor["model"]["protocolVersion"] == "v2", str(predictor))

readme = open(f"{root}/README.md").read()
section = readme[readme.index("## Serving"):]
section = section[:section.index("\n## ", 4)]
build_lines = [l.split("#")[0].strip() for l in re.findall(r"```sh\n(.*?)```", section, re.S)[0]
               .splitlines() if l.startswith(("scripts/", "cmake "))]
dockerfile = open(f"{root}/Dockerfile").read()
run_lines = [l[len("RUN "):].strip() for l in dockerfile.splitlines() if l.startswith("RUN ")]
check("the Dockerfile builds with the README's commands, in order",
      build_lines and run_lines[:len(build_lines)] == build_lines,
      f"README {build_lines}, Dockerfile {run_lines}")
check("the Dockerfile warms the kernel cache at image build for a portable target",
      any("--warm-only" in l and "--target x86-64-v3" in l for l in
          dockerfile.replace("\\\n", " ").splitlines()))
check("the Dockerfile starts from Debian 12", dockerfile.count("FROM debian:12") == 1)
print("deployment_test: all passed")
