"""Models served at an OpenAI-compatible endpoint (vLLM, llama.cpp's server, Ollama, ``transformers serve``).

The model folder holds ``dynadesk-model.json`` (the model name the endpoint declares and, when the user gives
one, a digest of the weights behind it) and ``endpoint.json`` (the server's base URL). The folder's digest
leaves ``endpoint.json`` out (:func:`digest_exclusions`), as a folder's digest leaves out where the folder
lies: it names *what* answers, not where it is reached. So an auditor registers the same model name and
weights digest at an endpoint of their own, gets the same model digest, and the audit re-runs there and
compares the answers field by field. A served run is *served, not sandboxed*: the evaluator cannot see or pin
what answers.

Prediction goes through the legacy ``/v1/completions`` endpoint, the one every server listed offers for a
plain prompt (the chat endpoint needs a chat template that small or base models lack), greedily
(``temperature`` 0, a fixed ``seed``):

* label tasks: the prompt lists the task's labels and asks for one; the answer's first label name (case
  and punctuation ignored) is the prediction with probability 1. An answer that names no label gets equal
  probabilities, so the prediction is the first listed label (the adapters' tie rule) and the run's
  accuracy shows the model's failure to answer rather than hiding it;
* span tasks: the generated text, trimmed, is the answer; its first occurrence in the context gives the
  offsets, and an answer that is not in the context is the empty span at 0.

All HTTP goes through :func:`post_json` / :func:`get_json` (the standard library's urllib, since the
evaluator imports no HTTP package); every failure there is an :class:`AdapterError` naming the endpoint.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from dynadesk.evaluator.adapter_base import AdapterError, _texts
from dynadesk.evaluator.adapters import register_kind

SERVED = "openai-served"
ENDPOINT_FILE = "endpoint.json"
DEFAULT_TIMEOUT_S = 60.0
MAX_ANSWER_TOKENS = 16
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


def check_served_manifest(manifest: dict[str, Any]) -> list[str]:
    """What a served manifest gets wrong beyond the common fields."""
    problems = []
    if "endpoint" in manifest and bad_endpoint(manifest["endpoint"]):
        problems.append("'endpoint' must be the server's http(s) base URL (e.g. http://127.0.0.1:8000)")
    if not isinstance(manifest.get("model"), str) or not manifest.get("model"):
        problems.append("'model' must name the model as the endpoint lists it (GET /v1/models)")
    digest = manifest.get("weights_digest")
    if digest is not None and not (isinstance(digest, str) and _DIGEST.match(digest)):
        problems.append("'weights_digest' must be sha256:<64 hex digits> when given")
    return problems


def bad_endpoint(endpoint: Any) -> bool:
    parts = urlsplit(endpoint) if isinstance(endpoint, str) else None
    return parts is None or parts.scheme not in ("http", "https") or not parts.hostname


def digest_exclusions(folder: Path) -> frozenset[str]:
    """Files a model folder's digest leaves out: a served folder's ``endpoint.json`` (where, not what)."""
    try:
        kind = json.loads((Path(folder) / "dynadesk-model.json").read_text(encoding="utf-8")).get("kind")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        return frozenset()
    return frozenset({ENDPOINT_FILE}) if kind == SERVED else frozenset()


def read_endpoint(folder: Path, manifest: dict[str, Any] | None = None) -> str:
    """The base URL a served folder is reached at (the manifest's ``endpoint`` wins when it has one)."""
    if manifest and "endpoint" in manifest:
        return str(manifest["endpoint"])
    path = Path(folder) / ENDPOINT_FILE
    try:
        endpoint = json.loads(path.read_text(encoding="utf-8")).get("endpoint")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError) as exc:
        raise AdapterError(f"{path}: cannot read the served model's endpoint ({exc}); register it again with "
                           "'dynadesk models add --served URL --model NAME'") from exc
    if bad_endpoint(endpoint):
        raise AdapterError(f"{path}: 'endpoint' must be the server's http(s) base URL, got {endpoint!r:.80}")
    return str(endpoint)


def _url(endpoint: str, path: str) -> str:
    """``endpoint`` + ``path``; a base URL given with its ``/v1`` suffix does not double it."""
    base = endpoint.rstrip("/")
    return base + (path.removeprefix("/v1") if base.endswith("/v1") else path)


def _call(request: urllib.request.Request, timeout: float) -> Any:
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:  # http(s) only: checked on registration
            return json.loads(resp.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        detail = exc.read(500).decode("utf-8", "replace").strip()
        raise AdapterError(f"{request.full_url}: the endpoint answered HTTP {exc.code}: {detail}") from exc
    except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
        reason = getattr(exc, "reason", exc)
        raise AdapterError(f"{request.full_url}: cannot reach the endpoint ({reason}); is the server running?") \
            from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AdapterError(f"{request.full_url}: the endpoint's answer is not JSON: {exc}") from exc


def get_json(endpoint: str, path: str, timeout: float = DEFAULT_TIMEOUT_S) -> Any:
    return _call(urllib.request.Request(_url(endpoint, path), method="GET"), timeout)


def post_json(endpoint: str, path: str, body: dict[str, Any], timeout: float = DEFAULT_TIMEOUT_S) -> Any:
    data = json.dumps(body).encode("utf-8")
    request = urllib.request.Request(_url(endpoint, path), data=data, method="POST",
                                     headers={"Content-Type": "application/json"})
    return _call(request, timeout)


def listed_models(endpoint: str, timeout: float = 10.0) -> list[str]:
    """The model names ``GET /v1/models`` declares."""
    answer = get_json(endpoint, "/v1/models", timeout)
    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(data, list):
        raise AdapterError(f"{endpoint}: /v1/models did not answer an OpenAI model list")
    return [str(m.get("id")) for m in data if isinstance(m, dict)]


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


class ServedAdapter:
    """A label or span task answered by an OpenAI-compatible endpoint (see the module docstring)."""

    kind = SERVED

    def __init__(self, model_dir: Path, manifest: dict[str, Any], device: str = "cpu", allow_pickle: bool = False):
        self.inputs = list(manifest["inputs"])
        self.endpoint = read_endpoint(model_dir, manifest)
        self.model = str(manifest["model"])
        self.labels: list[str] | None = list(manifest["labels"]) if "labels" in manifest else None
        self.context_field = manifest.get("context_field", "context")
        self.timeout = float(manifest.get("timeout_s", DEFAULT_TIMEOUT_S))

    def prompt(self, example: dict[str, str]) -> str:
        lines = [f"{field}: {example[field]}" for field in self.inputs]
        if self.labels is not None:
            lines.append(f"Answer with one of: {', '.join(self.labels)}.")
        lines.append("Answer:")
        return "\n".join(lines)

    def complete(self, prompt: str) -> str:
        body = {"model": self.model, "prompt": prompt, "max_tokens": MAX_ANSWER_TOKENS, "temperature": 0,
                "seed": 0}
        answer = post_json(self.endpoint, "/v1/completions", body, self.timeout)
        try:
            text = answer["choices"][0]["text"]
        except (KeyError, IndexError, TypeError) as exc:
            raise AdapterError(f"{self.endpoint}: /v1/completions answered without choices[0].text") from exc
        if not isinstance(text, str):
            raise AdapterError(f"{self.endpoint}: /v1/completions answered a non-text choice")
        return text

    def predict(self, batch: list[dict[str, str]]) -> list[dict[str, Any]]:
        cols = _texts(batch, self.inputs)
        examples = [{f: cols[j][i] for j, f in enumerate(self.inputs)} for i in range(len(batch))]
        return [self._one(ex, self.complete(self.prompt(ex))) for ex in examples]

    def _one(self, example: dict[str, str], text: str) -> dict[str, Any]:
        if self.labels is not None:
            said = f" {_norm(text)} "
            found = [(said.find(f" {_norm(lab)} "), i) for i, lab in enumerate(self.labels)
                     if f" {_norm(lab)} " in said]
            if not found:
                share = 1.0 / len(self.labels)
                return {"label": self.labels[0], "probs": {lab: share for lab in self.labels}}
            best = self.labels[min(found)[1]]
            return {"label": best, "probs": {lab: float(lab == best) for lab in self.labels}}
        context = example[self.context_field]
        answer = text.strip().splitlines()[0].strip() if text.strip() else ""
        start = context.find(answer) if answer else -1
        if start < 0:
            return {"answer": "", "start": 0, "end": 0, "score": 0.0}
        return {"answer": answer, "start": start, "end": start + len(answer), "score": 1.0}


register_kind(SERVED, ServedAdapter, check_served_manifest)
