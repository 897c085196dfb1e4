"""Scope leakage: asked from project A, how many of the top 5 hits belong to another project.

    .venv/bin/python -m bench.quality.scopes [--projects 4] [--facts 3]

Starts the real server on a temporary data directory and stores, through the REST API, the
memories of several projects that talk about the same things in the same words (each project's
cache, queue, database, deploys, ... with a different choice each: generated text, seeded) and
global memories (advice on the same topics, no project). Then, for every project and topic, it
asks the question a person working in that project would ask (the project is not named in the
query) twice through ``POST /api/v1/memories/search``: without a scope (as before scopes) and
with ``current_project`` (the scope ranking). Printed JSON, per mode: ``leak_at_5`` (the share
of top-5 hits from another project; target ≤ 0.05), ``own_at_5`` and ``global_at_5`` (shares
from the asking project and global), ``hit_at_1``/``hit_at_5`` (the asking project's main memory on
that topic at rank 1 / in the top 5), ``answer_at_1`` (any of the asking project's memories on
that topic at rank 1: each of them answers the question) and search latency (noisy: the machine is shared).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time

import httpx

from bench.harness.server import Server
from bench.harness.stats import percentiles

PROJECTS = ["shop", "blog", "analytics", "mobile", "billing", "search", "chat", "infra"]
TOPICS: dict[str, tuple[str, list[str]]] = {
    "cache": ("What do we use for caching?", ["Redis", "Memcached", "an in-process LRU", "Varnish"]),
    "queue": ("Which message queue do we use?", ["RabbitMQ", "Kafka", "SQS", "Redis streams"]),
    "database": ("Which database stores our data?", ["PostgreSQL", "MySQL", "SQLite", "MongoDB"]),
    "deploy": ("How do we deploy?", ["Kubernetes", "a single VM with systemd", "Fly.io", "Heroku"]),
    "tests": ("How do we run the tests?", ["pytest with xdist", "Jest", "Go test", "tox on CI"]),
    "auth": ("How do users log in?", ["OAuth with GitHub", "magic links", "passwords and TOTP", "SAML"]),
    "logging": ("Where do the logs go?", ["Loki", "Datadog", "CloudWatch", "a rotating file"]),
    "ci": ("Which CI do we use?", ["GitHub Actions", "GitLab CI", "Buildkite", "Jenkins"]),
    "frontend": ("Which frontend framework do we use?", ["React", "Vue", "Svelte", "server-side templates"]),
    "monitoring": (
        "What alerts us when something breaks?",
        ["Prometheus alerts", "Sentry", "PagerDuty", "Grafana"],
    ),
}
FACT_TEMPLATES = [
    "For caching we use {choice}; the cache keys expire after ten minutes.",
    "The {topic} setup: we picked {choice} after comparing the alternatives.",
    "Our {topic} runs on {choice}, configured in the repository's settings.",
]
GLOBAL_TEMPLATES = [
    "General advice on {topic}: keep the configuration in one place and document the choice.",
    "When choosing tools for {topic}, prefer what the team already knows.",
]


def memories(
    projects: list[str], facts: int, seed: int
) -> tuple[list[dict[str, str]], dict[tuple[str, str], str], dict[tuple[str, str], set[str]]]:
    """The memories to store (text, project or none), each (project, topic)'s main fact, and
    all its facts."""
    rng = random.Random(seed)
    items: list[dict[str, str]] = []
    main: dict[tuple[str, str], str] = {}
    #: Every fact of a (project, topic): each answers the question (``answer_at_1``).
    facts_of: dict[tuple[str, str], set[str]] = {}
    for project in projects:
        for topic, (_, choices) in TOPICS.items():
            choice = rng.choice(choices)
            for index in range(facts):
                template = FACT_TEMPLATES[index % len(FACT_TEMPLATES)]
                # A number of its own: projects that made the same choice must not share a
                # text (a text is stored once per user, under the first project that wrote it).
                if index == 0:
                    text = f"Our {topic} uses {choice}: decided in review {rng.randint(100, 999)}."
                    main[(project, topic)] = text
                else:
                    text = template.format(topic=topic, choice=choice).replace("For caching", f"For {topic}")
                    text += f" (note {rng.randint(100, 999)})"
                items.append({"text": text, "project": project})
                facts_of.setdefault((project, topic), set()).add(text)
    for topic in TOPICS:
        for template in GLOBAL_TEMPLATES:
            items.append({"text": template.format(topic=topic)})
    return items, main, facts_of


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--projects", type=int, default=4, help=f"how many projects (2-{len(PROJECTS)})")
    parser.add_argument("--facts", type=int, default=3, help="memories per project and topic")
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    projects = PROJECTS[: max(2, min(args.projects, len(PROJECTS)))]
    items, main_facts, all_facts = memories(projects, args.facts, args.seed)

    server = Server()
    try:
        token = server.token("bench")
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=server.base, headers=headers, timeout=120) as client:
            response = client.post("/api/v1/memories/batch", json={"items": items})
            response.raise_for_status()
            ids = {}
            for outcome in response.json()["results"]:
                result = outcome["results"][0]
                assert not result.get("already_existed"), result  # every text is its own memory
                ids[items[outcome["index"]]["text"]] = result["id"]
            project_of = {ids[item["text"]]: item.get("project") for item in items}
            report: dict[str, object] = {
                "projects": len(projects),
                "topics": len(TOPICS),
                "memories": len(items),
                "questions": len(projects) * len(TOPICS),
            }
            for mode in ("without_scope", "with_scope"):
                leaked = own = shared = first = answered = top5 = 0
                shown = 0
                latencies: list[float] = []
                for project in projects:
                    for topic, (question, _) in TOPICS.items():
                        body: dict[str, object] = {"query": question, "limit": 5}
                        if mode == "with_scope":
                            body["current_project"] = project
                        started = time.perf_counter()
                        answer = client.post("/api/v1/memories/search", json=body)
                        latencies.append(time.perf_counter() - started)
                        answer.raise_for_status()
                        hits = [hit["id"] for hit in answer.json()["results"]][:5]
                        shown += len(hits)
                        for hit in hits:
                            owner = project_of.get(hit)
                            leaked += owner is not None and owner != project
                            own += owner == project
                            shared += owner is None
                        target = ids[main_facts[(project, topic)]]
                        first += bool(hits) and hits[0] == target
                        answers = {ids[text] for text in all_facts[(project, topic)]}
                        answered += bool(hits) and hits[0] in answers
                        top5 += target in hits
                questions = len(projects) * len(TOPICS)
                report[mode] = {
                    "leak_at_5": round(leaked / max(shown, 1), 3),
                    "own_at_5": round(own / max(shown, 1), 3),
                    "global_at_5": round(shared / max(shown, 1), 3),
                    "hit_at_1": round(first / questions, 3),
                    "answer_at_1": round(answered / questions, 3),
                    "hit_at_5": round(top5 / questions, 3),
                    "search_ms": percentiles(latencies),
                    "search_ms_mean": round(statistics.mean(latencies) * 1000, 1),
                }
    finally:
        server.stop()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
