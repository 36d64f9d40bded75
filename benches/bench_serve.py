"""Benchmark `jeirt-lite serve`: requests/s and p50/p99 latency of one-question requests over 1, 8 and 32 keep-alive
connections, beside in-process `Router.route` called one question at a time on one thread, in one run.

The service runs as `python -m jeirt_lite serve` (the installed package, the shipped router unless --router) on a
free loopback port; the load comes from a separate process (an asyncio aiohttp client, this file with --client)
that keeps each connection busy with one request after another for --seconds. In-process runs are interleaved
with the service's (before, between and after), and each service rate is divided by the mean of the in-process
rates measured just before and after it, so that the ratio holds while other work shares the machine. Every answer
is checked against `Router.route` of the same question (names equal, P and difficulty to 1e-6).

Results go to bench_results/serve.json. Nothing is asserted about time.

    python benches/bench_serve.py                       # 1, 8, 32 connections, 15 s each
    python benches/bench_serve.py --connections 32 --seconds 5 --server-threads 1
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import os
import platform
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Optional

import numpy as np

REPO = Path(__file__).resolve().parents[1]
QUESTIONS = REPO / "data" / "mmlu_pro" / "questions.csv"
K = 3
POOL = 256  # distinct questions sent (cycled); each one's Router.route answer is the reference


def usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def question_pool() -> list[str]:
    csv.field_size_limit(2**31 - 1)
    with open(QUESTIONS, newline="", encoding="utf-8") as handle:
        texts = [row["text"] for row in csv.DictReader(handle)]
    return texts[:: len(texts) // POOL][:POOL]


def percentiles(seconds: list[float]) -> tuple[float, float]:
    if not seconds:
        return float("nan"), float("nan")
    p50, p99 = np.percentile(np.asarray(seconds) * 1000.0, [50, 99])
    return float(p50), float(p99)


# -- in process ------------------------------------------------------------------------------------------------


def in_process(router: Any, pool: list[str], seconds: float, start: int) -> dict[str, Any]:
    """Router.route on one question at a time, on this thread, for `seconds`."""
    latencies: list[float] = []
    i = start
    cpu = time.process_time()
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        text = pool[i % len(pool)]
        began = time.perf_counter()
        router.route([text], k=K)
        latencies.append(time.perf_counter() - began)
        i += 1
    cpu_ms = (time.process_time() - cpu) * 1000.0 / max(1, len(latencies))
    p50, p99 = percentiles(latencies)
    return {"requests": len(latencies), "rate": len(latencies) / sum(latencies), "p50_ms": p50, "p99_ms": p99,
            "cpu_ms": cpu_ms}


# -- the load generator (a process of its own) -----------------------------------------------------------------


async def load(url: str, pool: list[str], connections: int, warmup: float, seconds: float) -> dict[str, Any]:
    import aiohttp

    records: list[tuple[int, int, float, str]] = []  # pool index, status, latency, body
    timeout = aiohttp.ClientTimeout(total=30)
    bodies = [json.dumps({"texts": [text], "k": K}).encode() for text in pool]
    headers = {"Content-Type": "application/json"}
    async with aiohttp.ClientSession(
        timeout=timeout, connector=aiohttp.TCPConnector(limit=connections)
    ) as session:
        loop = asyncio.get_running_loop()
        measure_from = loop.time() + warmup
        end = measure_from + seconds
        errors: list[str] = []

        async def connection(offset: int) -> None:
            i = offset
            while loop.time() < end:
                began = time.perf_counter()
                try:
                    async with session.post(url, data=bodies[i % len(pool)], headers=headers) as response:
                        body = await response.read()
                        status = response.status
                except Exception as error:  # counted and reported, never hidden
                    errors.append(repr(error))
                    status, body = -1, b""
                if loop.time() >= measure_from:
                    records.append((i % len(pool), status, time.perf_counter() - began, body.decode()))
                i += connections

        await asyncio.gather(*(connection(c) for c in range(connections)))
    return {"records": records, "errors": errors, "seconds": seconds}


def client_main(options: argparse.Namespace) -> int:
    pool = json.loads(Path(options.pool).read_text(encoding="utf-8"))
    result = asyncio.run(load(options.client, pool, options.client_connections, options.warmup, options.seconds))
    Path(options.out).write_text(json.dumps(result), encoding="utf-8")
    return 0


# -- the service -----------------------------------------------------------------------------------------------


def start_service(options: argparse.Namespace) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-m", "jeirt_lite", "serve", "--host", "127.0.0.1", "--port", "0",
               "--batch-wait-ms", str(options.batch_wait_ms)]
    if options.server_threads is not None:
        command += ["--threads", str(options.server_threads)]
    if options.router is not None:
        command += ["--router", str(options.router)]
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[Optional[str]] = queue.Queue()

    def pump() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    deadline = time.monotonic() + 180
    while True:
        line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        if line is None:
            raise SystemExit(f"the service exited with {process.wait()} before listening")
        if "listening on " in line:
            return process, line.split("listening on ")[1].split()[0]


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process, all its threads (Linux /proc; NaN elsewhere)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return float("nan")
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def health(url: str) -> dict[str, Any]:
    import urllib.request

    with urllib.request.urlopen(url + "/healthz", timeout=30) as response:
        counts: dict[str, Any] = json.loads(response.read())
    return counts


def service_run(url: str, pool_file: str, connections: int, options: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "load.json"
        command = [sys.executable, __file__, "--client", url + "/v1/route", "--pool", pool_file, "--out", str(out),
                   "--client-connections", str(connections), "--seconds", str(options.seconds),
                   "--warmup", str(options.warmup)]
        subprocess.run(command, check=True, stdin=subprocess.DEVNULL, timeout=options.seconds + 120)
        return dict(json.loads(out.read_text(encoding="utf-8")))


def client_cpu() -> float:
    used = os.times()
    return used.children_user + used.children_system


def check_answers(records: list[Any], expected: list[Any], difficulty: list[float]) -> int:
    """How many 200 answers differ from Router.route (names, or P / difficulty by more than 1e-6)."""
    wrong = 0
    for index, status, _, body in records:
        if status != 200:
            continue
        (result,) = json.loads(body)["results"]
        names = [step["llm"] for step in result["route"]]
        ps = np.array([step["p"] for step in result["route"]])
        if (names != expected[index].names[0] or np.abs(ps - expected[index].probabilities[0]).max() > 1e-6
                or abs(result["difficulty"] - difficulty[index]) > 1e-6):
            wrong += 1
    return wrong


def main() -> int:
    options = parse_args()
    if options.client:
        return client_main(options)
    from jeirt_lite import Router

    pool = question_pool()
    router = Router.load(threads=1)
    expected = [router.route([text], k=K) for text in pool]
    difficulty = [float(router.difficulty([text])[0]) for text in pool]
    print(f"{platform.processor() or platform.machine()}, {usable_cores()} usable cores; the machine may be shared: "
          "compare the ratios, measured interleaved, not the absolute rates")
    process, url = start_service(options)
    rows: list[dict[str, Any]] = []
    try:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as handle:
            json.dump(pool, handle)
            pool_file = handle.name
        before = in_process(router, pool, options.baseline_seconds, 0)
        for connections in options.connections:
            counts = health(url)
            cpu = (cpu_seconds(process.pid), client_cpu())
            served = service_run(url, pool_file, connections, options)
            served["cpu"] = (cpu_seconds(process.pid) - cpu[0], client_cpu() - cpu[1])
            after_counts = health(url)
            after = in_process(router, pool, options.baseline_seconds, connections)
            rows.append(summarise(connections, served, before, after, counts, after_counts, expected, difficulty))
            before = after
        os.unlink(pool_file)
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(30)
    report(rows, options, code)
    return 0


def summarise(connections: int, served: dict[str, Any], before: dict[str, Any], after: dict[str, Any],
              counts: dict[str, Any], after_counts: dict[str, Any], expected: list[Any],
              difficulty: list[float]) -> dict[str, Any]:
    records = served["records"]
    ok = [r for r in records if r[1] == 200]
    # CPU per request over warm-up and measured time alike (the counters cannot split them): all requests sent.
    sent = max(1, (after_counts["batched_requests"] - counts["batched_requests"]))
    service_cpu, client_cpu_s = served["cpu"]
    p50, p99 = percentiles([r[2] for r in records])
    rate = len(ok) / served["seconds"]
    baseline = (before["rate"] + after["rate"]) / 2
    batches = after_counts["batches"] - counts["batches"]
    jobs = after_counts["batched_requests"] - counts["batched_requests"]
    return {
        "connections": connections, "requests": len(records), "errors": len(records) - len(ok) + len(served["errors"]),
        "wrong_answers": check_answers(records, expected, difficulty), "rate": rate, "p50_ms": p50, "p99_ms": p99,
        "in_process_rate": baseline, "in_process_p50_ms": (before["p50_ms"] + after["p50_ms"]) / 2,
        "ratio": rate / baseline, "mean_batch": jobs / batches if batches else float("nan"),
        "service_cpu_ms": service_cpu * 1000.0 / sent, "client_cpu_ms": client_cpu_s * 1000.0 / sent,
        "in_process_cpu_ms": (before["cpu_ms"] + after["cpu_ms"]) / 2,
    }


def report(rows: list[dict[str, Any]], options: argparse.Namespace, code: int) -> None:
    print(f"one-question requests (k={K}), {options.seconds:g} s per level after {options.warmup:g} s warm-up; "
          f"service --threads {options.server_threads or 'default (all cores)'}, "
          f"--batch-wait-ms {options.batch_wait_ms:g}")
    print(f"{'conns':>5} {'requests':>9} {'errors':>6} {'wrong':>5} {'req/s':>8} {'p50 ms':>7} {'p99 ms':>7} "
          f"{'batch':>6} {'in-proc q/s':>11} {'ratio':>6} {'CPU ms/request: service':>24} {'client':>6} "
          f"{'in-proc':>7}")
    for r in rows:
        print(f"{r['connections']:>5} {r['requests']:>9,} {r['errors']:>6} {r['wrong_answers']:>5} {r['rate']:>8,.0f} "
              f"{r['p50_ms']:>7.1f} {r['p99_ms']:>7.1f} {r['mean_batch']:>6.1f} {r['in_process_rate']:>11,.0f} "
              f"{r['ratio']:>6.2f} {r['service_cpu_ms']:>24.2f} {r['client_cpu_ms']:>6.2f} "
              f"{r['in_process_cpu_ms']:>7.2f}")
    print(f"the service exited with {code} after SIGTERM")
    options.output.parent.mkdir(parents=True, exist_ok=True)
    options.output.write_text(json.dumps({"rows": rows, "sigterm_exit": code, "cores": usable_cores(),
                                          "options": {k: str(v) for k, v in vars(options).items()}}, indent=2))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connections", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--seconds", type=float, default=15.0, help="measured seconds per connection count")
    parser.add_argument("--warmup", type=float, default=2.0, help="unmeasured seconds before each")
    parser.add_argument("--baseline-seconds", type=float, default=5.0, help="each in-process run")
    parser.add_argument("--server-threads", type=int, default=None, help="serve --threads (default: all cores)")
    parser.add_argument("--batch-wait-ms", type=float, default=2.0, help="serve --batch-wait-ms (its default: 2)")
    parser.add_argument("--router", type=Path, default=None)
    parser.add_argument("--output", type=Path, default=REPO / "bench_results" / "serve.json")
    # The load generator's own options (this file run again as a separate process).
    parser.add_argument("--client", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--client-connections", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--pool", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", default=None, help=argparse.SUPPRESS)
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(main())
