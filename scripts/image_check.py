"""Starts Switchboard's images as the chart deploys them, without a container
engine (`make image-check`).

For each case (a values file of the chart, and the Secrets a cluster would
hold for it), the chart is rendered with `helm template`; for each Deployment
the image's root filesystem is unpacked from the OCI layout, and its
migration step (the init container) and then its service are started from it
as the kubelet would: in their own mount and PID namespaces, the image's root
read-only, the pod's volumes mounted where the Deployment says (emptyDir,
claims, ConfigMaps, Secrets), as the image's non-root user, with exactly the
image's environment plus the container's (Secret and ConfigMap references
resolved). The migration step must exit 0; the service must then answer the
Deployment's own startup, liveness and readiness probes (grpc.health.v1) with
SERVING, and stop with status 0 on SIGTERM within the grace period.

Needs root (mount namespaces, chroot). Run with the deploy-tools virtualenv
(PyYAML); the gRPC probes use the test virtualenv (grpcio-health-checking).
"""

from __future__ import annotations

import argparse
import base64
import gzip
import io
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "helm" / "switchboard"
STARTUP_LIMIT = 60.0


@dataclass
class Case:
    """One install: a values file, the Secrets the cluster holds, --set flags."""

    name: str
    values: str | None
    cluster_secrets: dict[str, dict[str, str]]
    sets: list[str] = field(default_factory=list)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def render(helm: str, case: Case) -> list[dict]:
    args = [helm, "template", "switchboard", str(CHART), "--namespace", "switchboard",
            "--kube-version", "1.30.0"]
    if case.values:
        args += ["-f", str(CHART / case.values)]
    for s in case.sets:
        args += ["--set", s]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return [d for d in yaml.safe_load_all(out) if d]


class Layouts:
    """The images built as OCI image layouts, one directory per image name."""

    def __init__(self, path: Path):
        self.path = path

    def unpack(self, image: str, into: Path) -> dict:
        """Extracts the image a pod spec names (`<registry>/<name>:<tag>`)
        into `into`; returns its config."""
        name, _, tag = image.rsplit("/", 1)[-1].partition(":")
        layout = self.path / name
        index = json.loads((layout / "index.json").read_text())
        digests = [m["digest"] for m in index["manifests"]
                   if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == tag]
        if len(digests) != 1:
            raise SystemExit(f"image-check: no single image {name}:{tag} in {layout}")

        def blob(digest: str) -> bytes:
            algorithm, value = digest.split(":", 1)
            return (layout / "blobs" / algorithm / value).read_bytes()

        manifest = json.loads(blob(digests[0]))
        config = json.loads(blob(manifest["config"]["digest"]))
        for layer in manifest["layers"]:
            data = blob(layer["digest"])
            if layer["mediaType"].endswith("gzip"):
                data = gzip.decompress(data)
            with tarfile.open(fileobj=io.BytesIO(data)) as tar:
                tar.extractall(into, numeric_owner=True, filter="fully_trusted")
        return config


def resolve_env(container: dict, secrets: dict, configmaps: dict) -> list[tuple[str, str]]:
    env = []
    for entry in container.get("env", []):
        if "value" in entry:
            env.append((entry["name"], str(entry["value"])))
            continue
        source = entry.get("valueFrom", {})
        if "secretKeyRef" in source:
            ref = source["secretKeyRef"]
            store = secrets
        elif "configMapKeyRef" in source:
            ref = source["configMapKeyRef"]
            store = configmaps
        else:
            raise SystemExit(f"image-check: cannot resolve {entry}")
        if ref["name"] not in store or ref["key"] not in store[ref["name"]]:
            raise SystemExit(f"image-check: {entry['name']} names {ref['name']}/{ref['key']}, which the cluster lacks")
        env.append((entry["name"], store[ref["name"]][ref["key"]]))
    names = [name for name, _ in env]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise SystemExit(f"image-check: duplicated environment variables {duplicates}")
    return env


class Pod:
    """The volumes of one pod, as directories on this machine."""

    def __init__(self, spec: dict, work: Path, secrets: dict, configmaps: dict):
        self.dirs: dict[str, Path] = {}
        for volume in spec.get("volumes", []):
            path = work / "volumes" / volume["name"]
            path.mkdir(parents=True)
            if "emptyDir" in volume:
                path.chmod(0o777)
            elif "persistentVolumeClaim" in volume:
                # fsGroup: the group owns the claim and its new files.
                os.chown(path, 0, spec["securityContext"]["fsGroup"])
                path.chmod(0o2775)
            elif "configMap" in volume or "secret" in volume:
                source = volume.get("configMap") or volume["secret"]
                store = configmaps if "configMap" in volume else secrets
                name = source.get("name") or source.get("secretName")
                data = store[name]
                items = source.get("items") or [{"key": k, "path": k} for k in data]
                for item in items:
                    (path / item["path"]).write_text(data[item["key"]])
                    (path / item["path"]).chmod(0o644)
            else:
                raise SystemExit(f"image-check: unsupported volume {volume}")
            self.dirs[volume["name"]] = path


def run_container(rootfs: Path, config: dict, container: dict, pod: Pod, spec: dict,
                  env: list[tuple[str, str]], work: Path) -> subprocess.Popen:
    """Starts `container` from `rootfs` the way a container runtime would."""
    image = config["config"]
    security = container["securityContext"]
    uid, gid = security["runAsUser"], security["runAsGroup"]
    if str(uid) == "0" or image.get("User", "").split(":")[0] not in (str(uid), ""):
        raise SystemExit(f"image-check: user {uid} does not match the image's {image.get('User')}")
    command = container.get("command") or image["Entrypoint"]
    args = container.get("args") or ([] if container.get("command") else image.get("Cmd") or [])
    full_env = [tuple(e.split("=", 1)) for e in image.get("Env", [])] + env
    workdir = container.get("workingDir") or image.get("WorkingDir") or "/"
    mounts = []
    for mount in container.get("volumeMounts", []):
        mounts.append((pod.dirs[mount["name"]], mount["mountPath"], mount.get("readOnly", False)))
    lines = ["set -eu", "mount --make-rprivate /"]
    # Mount points are made before the root turns read-only, as runtimes do.
    for point in ["/proc", "/dev"] + [m[1] for m in mounts]:
        lines.append(f"mkdir -p {shlex.quote(str(rootfs) + point)}")
    lines += [f"mount --bind {rootfs} {rootfs}", f"mount -o remount,bind,ro {rootfs}"]
    lines.append(f"mount -t proc proc {rootfs}/proc")
    lines.append(f"mount -t tmpfs -o nosuid,mode=755 tmpfs {rootfs}/dev")
    for device in ["null", "zero", "urandom", "random"]:
        lines.append(f"touch {rootfs}/dev/{device} && mount --bind /dev/{device} {rootfs}/dev/{device}")
    for source, target, read_only in mounts:
        dest = shlex.quote(str(rootfs) + target)
        lines.append(f"mount --bind {shlex.quote(str(source))} {dest}")
        if read_only:
            lines.append(f"mount -o remount,bind,ro {dest}")
    exec_env = " ".join(shlex.quote(f"{k}={v}") for k, v in full_env)
    entry = " ".join(shlex.quote(a) for a in [*command, *args])
    # No capability survives the switch to the non-root user.
    lines.append(
        f"exec /usr/bin/env -i {exec_env} /usr/bin/unshare --root={rootfs} --wd={shlex.quote(workdir)} "
        f"--setgid {gid} --setuid {uid} {entry}"
    )
    script = work / f"{container['name']}.sh"
    script.write_text("\n".join(lines) + "\n")
    log = open(work / f"{container['name']}.log", "wb")
    return subprocess.Popen(
        ["unshare", "--mount", "--pid", "--fork", "--kill-child", "/bin/sh", str(script)],
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
    )


def service_pid(runner: subprocess.Popen) -> int:
    """The service: the child the namespace runner forked (it `exec`s into it)."""
    for _ in range(500):
        children = Path(f"/proc/{runner.pid}/task/{runner.pid}/children").read_text().split()
        if children:
            return int(children[0])
        time.sleep(0.01)
    raise SystemExit("image-check: the container did not start")


def probe(python: str, port: int, service: str) -> str:
    code = (
        "import sys, grpc\n"
        "from grpc_health.v1 import health_pb2, health_pb2_grpc\n"
        "ch = grpc.insecure_channel(sys.argv[1])\n"
        "try:\n"
        "    r = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(service=sys.argv[2]), timeout=2)\n"
        "    print(health_pb2.HealthCheckResponse.ServingStatus.Name(r.status))\n"
        "except grpc.RpcError as e:\n"
        "    print(e.code().name)\n"
    )
    result = subprocess.run([python, "-c", code, f"127.0.0.1:{port}", service],
                            capture_output=True, text=True, check=True)
    return result.stdout.strip()


def check_deployment(deployment: dict, layout: Layouts, secrets: dict, configmaps: dict,
                     python: str, work: Path) -> None:
    name = deployment["metadata"]["name"]
    spec = deployment["spec"]["template"]["spec"]
    pod = Pod(spec, work, secrets, configmaps)
    unpacked: dict[str, tuple[Path, dict]] = {}
    for container in spec.get("initContainers", []) + spec["containers"]:
        if container["image"] not in unpacked:
            rootfs = work / "rootfs" / str(len(unpacked))
            rootfs.mkdir(parents=True)
            unpacked[container["image"]] = (rootfs, layout.unpack(container["image"], rootfs))
        rootfs, config = unpacked[container["image"]]
        env = resolve_env(container, secrets, configmaps)
        runner = run_container(rootfs, config, container, pod, spec, env, work)
        log = work / f"{container['name']}.log"
        if container in spec.get("initContainers", []):
            status = runner.wait(timeout=120)
            if status != 0:
                sys.stderr.write(log.read_text())
                raise SystemExit(f"image-check: {name}: init container {container['name']} exited with {status}")
            print(f"image-check: {name}: {container['name']} (init) exited 0")
            continue
        try:
            check_probes(name, container, runner, python, log)
            pid = service_pid(runner)
            check_confinement(name, pid, container)
            os.kill(pid, signal.SIGTERM)
            grace = spec["terminationGracePeriodSeconds"]
            status = runner.wait(timeout=grace)
            if status != 0:
                sys.stderr.write(log.read_text())
                raise SystemExit(f"image-check: {name}: exited with {status} on SIGTERM")
            print(f"image-check: {name}: {container['name']} stopped cleanly on SIGTERM (grace {grace}s)")
        finally:
            if runner.poll() is None:
                runner.kill()
                runner.wait()


def check_confinement(name: str, pid: int, container: dict) -> None:
    """The service runs as the pod's user, without capabilities, on a
    read-only root."""
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    uid, gid = str(container["securityContext"]["runAsUser"]), str(container["securityContext"]["runAsGroup"])
    if set(status["Uid"].split()) != {uid} or set(status["Gid"].split()) != {gid}:
        raise SystemExit(f"image-check: {name}: runs as uid {status['Uid']}, gid {status['Gid']}")
    if int(status["CapEff"], 16) or int(status["CapPrm"], 16) or status["Groups"].strip():
        raise SystemExit(f"image-check: {name}: keeps capabilities or groups: {status}")
    root = next(line.split() for line in Path(f"/proc/{pid}/mountinfo").read_text().splitlines()
                if line.split()[4] == "/")
    if "ro" not in root[5].split(","):
        raise SystemExit(f"image-check: {name}: the root filesystem is writable: {root}")


def check_probes(name: str, container: dict, runner: subprocess.Popen, python: str, log: Path) -> None:
    start = time.monotonic()
    startup = container["startupProbe"]["grpc"]
    while probe(python, startup["port"], startup.get("service", "")) != "SERVING":
        if runner.poll() is not None or time.monotonic() - start > STARTUP_LIMIT:
            sys.stderr.write(log.read_text())
            raise SystemExit(f"image-check: {name}: the startup probe never passed")
        time.sleep(0.1)
    for kind in ["livenessProbe", "readinessProbe"]:
        grpc = container[kind]["grpc"]
        status = probe(python, grpc["port"], grpc.get("service", ""))
        if status != "SERVING":
            sys.stderr.write(log.read_text())
            raise SystemExit(f"image-check: {name}: {kind} on '{grpc.get('service', '')}' answered {status}")
    print(f"image-check: {name}: {container['name']} passed its startup, liveness and readiness probes "
          f"in {time.monotonic() - start:.1f}s")


def cluster_objects(docs: list[dict], case: Case) -> tuple[dict, dict]:
    secrets = {name: dict(data) for name, data in case.cluster_secrets.items()}
    configmaps = {}
    for doc in docs:
        if doc["kind"] == "Secret":
            data = {k: base64.b64decode(v).decode() for k, v in (doc.get("data") or {}).items()}
            data.update(doc.get("stringData") or {})
            secrets[doc["metadata"]["name"]] = data
        elif doc["kind"] == "ConfigMap":
            configmaps[doc["metadata"]["name"]] = doc.get("data") or {}
    return secrets, configmaps


def psql(admin_url: str, sql: str) -> None:
    env = dict(os.environ, PGOPTIONS="-c client_min_messages=warning")
    subprocess.run(["psql", admin_url, "-qc", sql], check=True, env=env)


def postgres_database(admin_url: str, name: str) -> str:
    psql(admin_url, f"DROP DATABASE IF EXISTS {name}")
    psql(admin_url, f"CREATE DATABASE {name}")
    return admin_url.rsplit("/", 1)[0] + "/" + name


def cases(admin_url: str) -> list[Case]:
    sealing = "k1:" + base64.b64encode(os.urandom(32)).decode()
    mcp_port, runs_port = free_port(), free_port()
    ports = [f"mcpService.port={mcp_port}", f"runsService.port={runs_port}"]
    suffix = f"{os.getpid()}"
    return [
        Case("sqlite-single-replica", "ci/sqlite-single-replica-values.yaml",
             {"switchboard-jwt": {"secret": "a-cluster-secret-of-enough-length"}}, ports),
        Case("postgres-production", "ci/postgres-production-values.yaml", {
            "switchboard-mcp-db": {"uri": postgres_database(admin_url, f"sb_image_mcp_{suffix}")},
            "switchboard-runs-db": {"uri": postgres_database(admin_url, f"sb_image_runs_{suffix}")},
            "switchboard-sealing-keys": {"keys": sealing},
            "switchboard-model-keys": {"openai": "sk-test"},
        }, ports),
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--images", default=str(ROOT / "target" / "images"))
    parser.add_argument("--helm", default=str(ROOT / ".tools" / "bin" / "helm"))
    parser.add_argument("--grpc-python", default=str(ROOT / ".tools" / "venv" / "bin" / "python"))
    parser.add_argument("--postgres", default=os.environ.get(
        "SWITCHBOARD_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test"))
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("image-check: needs root (mount namespaces and chroot)")
    layout = Layouts(Path(args.images))
    started = time.monotonic()
    checked = 0
    all_cases = cases(args.postgres)
    for case in all_cases:
        docs = render(args.helm, case)
        secrets, configmaps = cluster_objects(docs, case)
        for deployment in [d for d in docs if d["kind"] == "Deployment"]:
            with tempfile.TemporaryDirectory(prefix="image-check-") as work:
                print(f"image-check: {case.name}: {deployment['metadata']['name']}")
                check_deployment(deployment, layout, secrets, configmaps, args.grpc_python, Path(work))
                checked += 1
    for case in all_cases:
        for secret in case.cluster_secrets.values():
            url = secret.get("uri", "")
            if url.startswith("postgres"):
                psql(args.postgres, f"DROP DATABASE IF EXISTS {url.rsplit('/', 1)[1]}")
    print(f"image-check: {checked} deployments started from their images in {time.monotonic() - started:.0f}s")
    print(f"{checked} passed, 0 failed")


if __name__ == "__main__":
    main()
