"""The Docker daemon from this machine: one client, the daemon and GPU checks, image lookups.

Shared by the runner, the image builder, audits, the CLI's ``image status``, the app's status bar and
the demo; with :mod:`~dynadesk.orchestration.runners` and :mod:`~dynadesk.orchestration.image` the only
code that imports the docker SDK. Every daemon error leaves here as a
:class:`~dynadesk.errors.DockerUnavailable` whose message says the fix.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import IO, Any, Protocol

from dynadesk.errors import DockerUnavailable

__all__ = ["DaemonStatus", "DockerClient", "DockerContainer", "DockerImage", "daemon_status",
           "docker_client", "docker_gpu_status", "has_image", "host_gpu_count",
           "first_line", "image_id_of", "remote_docker_host", "transport_errors"]

NO_DAEMON_FIX = "start Docker (packaging/start_docker.sh) or use --runner local"


# What DynaDesk uses of the docker SDK (which ships no types): a typed seam for every module that is handed a
# client, and the list of calls a test double or a new SDK version must answer. Only these are used.
class DockerImage(Protocol):
    @property
    def id(self) -> str: ...

    def tag(self, repository: str, tag: str | None = None) -> bool: ...


class DockerImages(Protocol):
    def get(self, name: str) -> DockerImage: ...

    def load(self, data: IO[bytes]) -> list[DockerImage]: ...


class DockerContainer(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def labels(self) -> dict[str, str]: ...

    @property
    def status(self) -> str: ...

    attrs: dict[str, Any]

    def start(self) -> None: ...

    def logs(self, *, stream: bool, follow: bool) -> Iterator[bytes]: ...

    def reload(self) -> None: ...

    def kill(self) -> None: ...

    def wait(self, *, timeout: float) -> dict[str, Any]: ...

    def remove(self, *, force: bool) -> None: ...


class DockerContainers(Protocol):
    def list(self, *, all: bool, filters: Mapping[str, str]) -> list[DockerContainer]: ...

    def create(self, image: str, **options: Any) -> DockerContainer: ...


class DockerClient(Protocol):
    @property
    def images(self) -> DockerImages: ...

    @property
    def containers(self) -> DockerContainers: ...

    def ping(self) -> bool: ...

    def version(self) -> dict[str, Any]: ...

    def info(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


def transport_errors() -> tuple[type[BaseException], ...]:
    """What the docker SDK raises when the daemon fails or goes away (its own errors and requests')."""
    import docker
    import requests

    return docker.errors.DockerException, requests.exceptions.RequestException


def remote_docker_host(url: str) -> str | None:
    """``url`` when a ``DOCKER_HOST`` value names another machine (ssh://, tcp:// to a non-loopback host)."""
    from urllib.parse import urlsplit

    if url.startswith("ssh://"):
        return url
    if url.startswith("tcp://") and urlsplit(url).hostname not in ("localhost", "127.0.0.1", "::1"):
        return url
    return None


def docker_client(timeout: float = 120) -> DockerClient:
    """A docker SDK client from the environment (``DOCKER_HOST``; a remote one is refused by ``check_ready``)."""
    try:
        import docker
    except ImportError as exc:
        raise DockerUnavailable(f"the docker SDK is not installed ({exc}); pip install docker, or use --runner "
                                "local") from exc
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
        return client  # type: ignore[no-any-return]  # the SDK is untyped; DockerClient says what we use
    except transport_errors() as exc:
        raise DockerUnavailable(f"no Docker daemon answers ({first_line(exc)}); {NO_DAEMON_FIX}") from exc


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else type(exc).__name__


@dataclass(frozen=True)
class DaemonStatus:
    """Whether a Docker daemon answers, and the line to show (its version, or the cause and the fix)."""

    ok: bool
    detail: str


def daemon_status(timeout: float = 3.0) -> DaemonStatus:
    """The one daemon check the CLI, the GUI's status bar and the demo use."""
    try:
        client = docker_client(timeout=timeout)
    except DockerUnavailable as exc:
        return DaemonStatus(False, str(exc))
    try:
        return DaemonStatus(True, f"Docker {client.version().get('Version', '?')}")
    except transport_errors() as exc:  # a daemon that answers ping but not version
        return DaemonStatus(False, f"Docker answers but not fully ({first_line(exc)}); {NO_DAEMON_FIX}")
    finally:
        client.close()


def host_gpu_count() -> int:
    """GPUs the NVIDIA driver reports on this machine (0 without a driver or device)."""
    try:
        import pynvml
    except ImportError:
        return 0
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:  # no driver (NVML_ERROR_LIBRARY_NOT_FOUND ...) or no device
        return 0
    try:
        return int(pynvml.nvmlDeviceGetCount())
    finally:
        pynvml.nvmlShutdown()


def docker_gpu_status(timeout: float = 3.0) -> DaemonStatus:
    """Can a container get a GPU: a device answers, and the daemon has NVIDIA's runtime (``DockerRunner.gpu_status``;
    the app asks a runner, never this by a runner's name)."""
    n = host_gpu_count()
    if n == 0:
        return DaemonStatus(False, "no GPU answers on this machine (no NVIDIA driver or device)")
    try:
        client = docker_client(timeout=timeout)
    except DockerUnavailable as exc:
        return DaemonStatus(False, str(exc))
    try:
        runtimes = client.info().get("Runtimes") or {}
    except transport_errors() as exc:
        return DaemonStatus(False, f"Docker did not say its runtimes ({first_line(exc)})")
    finally:
        client.close()
    if "nvidia" not in runtimes:
        return DaemonStatus(False, f"{n} GPU(s), but this Docker has no NVIDIA runtime; install NVIDIA's container "
                                   "toolkit (nvidia-container-toolkit) and restart Docker")
    return DaemonStatus(True, f"{n} GPU(s) through Docker's NVIDIA runtime")


def has_image(client: DockerClient, name: str) -> bool:
    """Is an image with this name or Id in Docker (a daemon error is a :class:`DockerUnavailable`)."""
    return image_id_of(client, name) is not None


def image_id_of(client: DockerClient, name: str) -> str | None:
    """The Id of the image with this name or Id, None when Docker does not have it."""
    import docker

    try:
        return str(client.images.get(name).id)
    except docker.errors.ImageNotFound:
        return None
    except transport_errors() as exc:
        raise DockerUnavailable(f"Docker is not usable: {first_line(exc)}; {NO_DAEMON_FIX}") from exc

