"""The LLM stage: an OpenAI-compatible chat endpoint rates each candidate 0-10. Pure.

One request per question (POST `{LYRA_LLM_URL}/chat/completions`, the API Ollama, vLLM,
llama.cpp's server and hosted services all serve), every candidate in it, numbered; the answer
must be JSON `{"ratings": [{"id": 1, "rating": 7}, ...]}` rating each one. A timeout, a refusal
(429, 401...), a server error or an answer that is not that JSON skips the stage with the
reason, and the earlier stages' order stands. The API key (LYRA_LLM_API_KEY) is sent as a bearer
token and never appears in a message; neither do credentials written into the URL.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import requests

# A passage is cut to this many characters in the prompt: enough for an abstract's claim.
PASSAGE_CHARS = 1500
SYSTEM_PROMPT = (
    "You judge evidence for a research question. Rate how well each numbered passage answers "
    "the question's intent, from 0 (unrelated) to 10 (answers it directly). Reply with JSON "
    'only: {"ratings": [{"id": <passage number>, "rating": <0-10>}, ...]}, one entry per '
    "passage."
)


@dataclass(frozen=True)
class LlmEndpoint:
    """Where the chat API is and which model to ask; the key stays out of every message."""

    url: str
    model: str
    api_key: str = ""

    @classmethod
    def from_environment(cls, model: str | None = None) -> LlmEndpoint | None:
        """LYRA_LLM_URL, LYRA_LLM_MODEL (else `model`), LYRA_LLM_API_KEY; None without a URL."""
        url = os.environ.get("LYRA_LLM_URL", "").strip()
        if not url:
            return None
        chosen = os.environ.get("LYRA_LLM_MODEL", "").strip() or model or ""
        return cls(url, chosen, os.environ.get("LYRA_LLM_API_KEY", ""))

    @property
    def shown_url(self) -> str:
        """The URL without any user:password written into it."""
        parts = urlsplit(self.url)
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
        return urlunsplit(parts._replace(netloc=netloc))


class LlmSkipped(Exception):
    """The stage could not rate: the message says why (shown, recorded)."""


class LlmRater:
    def __init__(self, endpoint: LlmEndpoint, timeout_s: float) -> None:
        self.endpoint = endpoint
        self._timeout_s = timeout_s
        self._http = requests.Session()

    def rate(self, question: str, passages: Sequence[str]) -> list[float]:
        """One rating 0-10 per passage, in order; LlmSkipped with the reason otherwise."""
        endpoint = self.endpoint
        numbered = "\n\n".join(
            f"[{n}] {passage[:PASSAGE_CHARS]}" for n, passage in enumerate(passages, start=1)
        )
        body = {
            "model": endpoint.model,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": f"Question: {question}\n\nPassages:\n{numbered}"},
            ],
        }
        headers = {"Authorization": f"Bearer {endpoint.api_key}"} if endpoint.api_key else {}
        where = f"{endpoint.shown_url.rstrip('/')}/chat/completions"
        try:
            response = self._http.post(
                f"{endpoint.url.rstrip('/')}/chat/completions",
                json=body,
                headers=headers,
                timeout=self._timeout_s,
            )
        except requests.Timeout:
            raise LlmSkipped(f"{where} did not answer within {self._timeout_s:g} s") from None
        except requests.RequestException as exc:
            raise LlmSkipped(f"{where} cannot be reached ({type(exc).__name__})") from None
        if response.status_code != 200:
            raise LlmSkipped(_refusal(where, response))
        return _ratings(response, len(passages))


def _refusal(where: str, response: requests.Response) -> str:
    status = response.status_code
    if status == 429:
        return f"{where} is rate limiting (429): try again later or raise its limit"
    if status in (401, 403):
        return f"{where} refused the key ({status}): check LYRA_LLM_API_KEY"
    if status >= 500:
        return f"{where} failed ({status})"
    return f"{where} refused the request ({status}): check LYRA_LLM_URL and the model name"


def _ratings(response: requests.Response, count: int) -> list[float]:
    try:
        content = response.json()["choices"][0]["message"]["content"]
        answer = json.loads(_without_fences(content))
        given = {int(item["id"]): float(item["rating"]) for item in answer["ratings"]}
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise LlmSkipped(f"the answer is not the JSON ratings asked for ({_short(exc)})") from None
    missing = [n for n in range(1, count + 1) if n not in given]
    if missing:
        raise LlmSkipped(f"the answer rates {count - len(missing)} of {count} passages")
    return [min(max(given[n], 0.0), 10.0) for n in range(1, count + 1)]


def _without_fences(content: str) -> str:
    """The JSON of an answer that wrapped it in a Markdown code block, as models often do."""
    fenced = re.search(r"```(?:json)?\s*(.*?)```", content, re.DOTALL)
    return fenced.group(1) if fenced else content


def _short(exc: Exception) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 80 else text[:77] + "..."
