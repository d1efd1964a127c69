"""An OpenAI-compatible chat endpoint, `/llm/v1/chat/completions`, that rates passages.

It answers the LLM stage of `scrapy select` (lyra_crawl.retrieval.llm) the way a real server
would, deterministically: each numbered passage `[n] ...` of the last user message is rated
0-10 by the share of the question's words (three letters or more) it contains. Faults are asked
for by the model name, so one simulator serves every case:

    sim                 ratings
    sim-slow-<ms>       ratings after <ms> milliseconds
    sim-429, sim-500    that HTTP status (429 with Retry-After)
    sim-malformed       a JSON body cut off halfway
    sim-prose           a well-formed answer whose content is prose, not the ratings' JSON
"""

from __future__ import annotations

import json
import re
import time

from lyra_crawl.simulator.engines.base import SimPage

PREFIX = "llm"
PATH = "/v1/chat/completions"
_WORD = re.compile(r"[a-z0-9]{3,}")
_PASSAGE = re.compile(r"^\[(\d+)\]\s*(.*?)(?=^\[\d+\]|\Z)", re.MULTILINE | re.DOTALL)
JSON = "application/json"


def chat_answer(path: str, body: bytes) -> SimPage:
    if path != PATH:
        return SimPage(404, f"no such endpoint {path!r}: POST {PATH}", "text/plain")
    try:
        request = json.loads(body)
        model = str(request["model"])
        prompt = request["messages"][-1]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        return SimPage(400, json.dumps({"error": "expected a chat completion request"}), JSON)
    slow = re.fullmatch(r"sim-slow-(\d+)", model)
    if slow:
        time.sleep(int(slow.group(1)) / 1000)
    if model in ("sim-429", "sim-500"):
        status = int(model[-3:])
        headers = (("Retry-After", "2"),) if status == 429 else ()
        return SimPage(status, json.dumps({"error": f"HTTP {status}"}), JSON, headers)
    content = (
        "These passages look relevant to me."
        if model == "sim-prose"
        else json.dumps({"ratings": ratings(prompt)})
    )
    answer = json.dumps(
        {
            "object": "chat.completion",
            "model": model,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}},
            ],
        }
    )
    if model == "sim-malformed":
        answer = answer[: len(answer) // 2]
    return SimPage(200, answer, JSON)


def ratings(prompt: str) -> list[dict[str, int]]:
    """Each passage's rating: 10 x the share of the question's words it has, rounded."""
    question, _, passages = prompt.partition("Passages:")
    wanted = set(_WORD.findall(question.removeprefix("Question:").lower()))
    rated = []
    for match in _PASSAGE.finditer(passages.strip()):
        words = set(_WORD.findall(match.group(2).lower()))
        share = len(wanted & words) / len(wanted) if wanted else 0.0
        rated.append({"id": int(match.group(1)), "rating": round(10 * share)})
    return rated
